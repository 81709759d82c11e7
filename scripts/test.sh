#!/usr/bin/env bash
# Sets up, builds and runs every test: `bash scripts/test.sh`.
# BUILD_DIR (default build), JOBS (default: the number of cores), CMAKE_ARGS, TARGETS (default:
# everything; the sanitizer builds name tensorstream_tests, what ctest runs) and CTEST_ARGS (e.g.
# `-LE cli` to leave out an area: each test is labelled with its area) can be set.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
CMAKE_ARGS="-DTENSORSTREAM_WITH_TORCH=ON -DTENSORSTREAM_BUILD_TESTS=ON ${CMAKE_ARGS:-}" \
  bash scripts/build.sh
# The tests talk only to servers they start on loopback. A proxy in this machine's environment
# would take those connections too (loopback goes through one unless no_proxy lists it, as with
# curl); the proxy tests set the variables they test themselves.
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u no_proxy -u NO_PROXY \
  ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure -j "${JOBS:-$(nproc)}" ${CTEST_ARGS:-} \
  | tee "$log" || status=$?
# What to look at first when the suite's time grows: its slowest tests.
echo "the 15 slowest tests:"
# (awk, not head, takes the first 15: head would leave sort writing into a closed pipe, which
# pipefail reports as a failure.)
{ grep -E '^ *[0-9]+/[0-9]+ Test +#[0-9]+: ' "$log" || true; } \
  | awk '{ printf "%8.2f s  %s\n", $(NF-1), $4 }' | sort -rn | awk 'NR <= 15'
exit "$status"
