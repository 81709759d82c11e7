#!/usr/bin/env bash
# Sets up, builds and runs every test: `bash scripts/test.sh`.
# BUILD_DIR (default build) and JOBS (default: the number of cores) can be overridden.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}"
