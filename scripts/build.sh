#!/usr/bin/env bash
# Configures and builds tensorstream (library, CLI, tests, benchmarks, examples) into BUILD_DIR.
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
cmake --build "$build_dir" -j "${JOBS:-$(nproc)}"
