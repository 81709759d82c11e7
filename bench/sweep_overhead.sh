#!/usr/bin/env bash
# What a sweep's own machinery costs: a 1-cell `tensorstream bench` against `tensorstream stream`
# with the same settings, alternating, each in a fresh process. Prints each pair's GB/s and the
# ratio of the medians, which should be 1 within the noise.
#
#   bash bench/sweep_overhead.sh URL [RUNS] [CHUNK_SIZE] [CONCURRENCY]
#
# Takes the storage environment (AWS_ENDPOINT_URL, ...) as the CLI does. Needs python3.
set -euo pipefail
url="$1"
runs="${2:-5}"
chunk="${3:-16MiB}"
concurrency="${4:-32}"
cli="${TENSORSTREAM_CLI:-$(dirname "$0")/../build/tensorstream}"

bench_rates=()
stream_rates=()
for ((i = 1; i <= runs; ++i)); do
  bench=$("$cli" bench "$url" --chunk-size "$chunk" --concurrency "$concurrency" --repeat 1 \
    --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["cells"][0]["gb_per_s"])')
  stream=$("$cli" stream "$url" --chunk-size "$chunk" --concurrency "$concurrency" --json |
    tail -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["summary"]["gb_per_s"])')
  printf 'run %d: bench %.3f GB/s, stream %.3f GB/s\n' "$i" "$bench" "$stream"
  bench_rates+=("$bench")
  stream_rates+=("$stream")
done
python3 - "${bench_rates[*]}" "${stream_rates[*]}" <<'PY'
import statistics, sys
bench = [float(x) for x in sys.argv[1].split()]
stream = [float(x) for x in sys.argv[2].split()]
print(f"median: bench {statistics.median(bench):.3f} GB/s, stream {statistics.median(stream):.3f} GB/s, "
      f"ratio {statistics.median(bench) / statistics.median(stream):.2f}")
PY
