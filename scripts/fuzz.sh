#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang and runs each for FUZZ_SECONDS (default 30)
# from its seed corpus, with its dictionary: `bash scripts/fuzz.sh [TARGET...]`.
# Run longer with e.g. `FUZZ_SECONDS=3600 bash scripts/fuzz.sh url_fuzz`. New inputs collect in
# BUILD_DIR/corpus/TARGET (BUILD_DIR defaults to build-fuzz), never in the seed corpus; a crash
# leaves its input in BUILD_DIR/crashes/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build-fuzz}"
seconds="${FUZZ_SECONDS:-30}"
cxx="${FUZZ_CXX:-clang++-15}"
command -v "$cxx" >/dev/null || { echo "fuzz: $cxx not found (bash scripts/setup.sh installs it)" >&2; exit 1; }

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSORSTREAM_FUZZ=ON >/dev/null
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}"

targets=("$@")
if ((${#targets[@]} == 0)); then
  for source in tests/fuzz/*_fuzz.cpp; do targets+=("$(basename "$source" .cpp)"); done
fi

mkdir -p "$build_dir/crashes"
fuzz() {
  local target="$1"
  mkdir -p "$build_dir/corpus/$target"
  echo "fuzz: $target for ${seconds} s" >&2
  # -timeout and -rss_limit_mb turn a hang or runaway allocation into a reported failure.
  "$build_dir/tests/fuzz/$target" "$build_dir/corpus/$target" "tests/fuzz/corpus/$target" \
    -dict="tests/fuzz/$target.dict" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$build_dir/crashes/$target-" -print_final_stats=1 2>"$build_dir/$target.log" || {
    tail -n 60 "$build_dir/$target.log" >&2
    echo "fuzz: $target failed; its input is in $build_dir/crashes/" >&2
    return 1
  }
  local runs rate
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build_dir/$target.log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$build_dir/$target.log")
  echo "fuzz: $target clean: $runs runs in ${seconds} s, $rate exec/s" >&2
}

# A fuzzer runs on one core: as many run at once as there are cores, each for its full time.
jobs="${JOBS:-$(nproc)}"
running=()
failed=0
for target in "${targets[@]}"; do
  fuzz "$target" &
  running+=($!)
  if ((${#running[@]} >= jobs)); then
    wait "${running[0]}" || failed=1
    running=("${running[@]:1}")
  fi
done
for pid in "${running[@]}"; do wait "$pid" || failed=1; done
exit "$failed"
