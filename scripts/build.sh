#!/usr/bin/env bash
# Configures and builds tensorstream into BUILD_DIR (default build): every target, or the ones
# TARGETS names (e.g. TARGETS=tensorstream_cli). CMAKE_ARGS are passed to the configuration,
# BUILD_TYPE (default Release) is its build type, JOBS (default: the number of cores) the
# compile jobs at once.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir="${BUILD_DIR:-build}"
# ccache keys paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the objects
# of earlier builds instead of compiling everything again.
# Debug builds (the sanitizer jobs) would otherwise key on the directory through the debug info.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}" CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  ${CMAKE_ARGS:-} >/dev/null
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}" "${targets[@]}"
