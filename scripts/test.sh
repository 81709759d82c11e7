#!/usr/bin/env bash
# Sets up, builds and runs every test: `bash scripts/test.sh`.
# BUILD_DIR (default build) and JOBS (default: the number of cores) can be overridden.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
# The tests talk only to servers they start on loopback. A proxy in this machine's environment
# would take those connections too (loopback goes through one unless no_proxy lists it, as with
# curl); the proxy tests set the variables they test themselves.
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u no_proxy -u NO_PROXY \
  ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}"
