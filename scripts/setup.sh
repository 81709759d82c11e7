#!/usr/bin/env bash
# Installs what tensorstream needs on Debian 12. Idempotent: packages already present are skipped,
# so a second run is quick.
#
#   bash scripts/setup.sh          everything: the libraries with libtorch, the Python package,
#                                  and what the tests, benchmarks and fuzzers use (GoogleTest,
#                                  nginx, s3rver and Azurite on Node.js, botocore, the Azure
#                                  SDK's blob client, clang-15 and libFuzzer)
#   bash scripts/setup.sh --tool   only what the command-line tool and the libtorch-free libraries
#                                  need to build (scripts/demo.sh)
set -euo pipefail

usage() {
  echo "usage: scripts/setup.sh [--tool]" >&2
  exit 2
}
tool_only=false
case "${1:-}" in
  "") ;;
  --tool) tool_only=true ;;
  *) usage ;;
esac
(($# <= 1)) || usage

packages=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates
  libboost1.81-dev liburing-dev libssl-dev libsimdjson-dev libcli11-dev libpugixml-dev
  libxxhash-dev
)
if ! $tool_only; then
  packages+=(
    curl openssl libtorch-dev libgloo-dev
    python3-dev pybind11-dev python3-torch
    libgtest-dev libgmock-dev libbenchmark-dev python3-pytest
    nginx-light python3-botocore librsvg2-bin
    # The Azure SDK's blob client, which the tests seed Azurite with independently of our store.
    python3-azure-storage
    clang-15 libfuzzer-15-dev
  )
  # s3rver and Azurite run on Node.js; a machine that already has node and npm (say from
  # NodeSource) keeps them.
  command -v npm >/dev/null || packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present" >&2
fi

$tool_only && exit 0
# The S3 server of the tests, pinned by third_party/s3rver/package-lock.json. The registry is
# needed here, at setup, never while tests run.
s3rver_dir="$(dirname "$0")/../third_party/s3rver"
if [[ ! -x "$s3rver_dir/node_modules/.bin/s3rver" ]]; then
  echo "setup: installing s3rver from its lock file" >&2
  npm ci --prefix "$s3rver_dir" --no-audit --no-fund --loglevel=error >/dev/null
fi
# The Azure Blob Storage emulator of the tests, pinned the same way by
# third_party/azurite/package-lock.json.
azurite_dir="$(dirname "$0")/../third_party/azurite"
if [[ ! -x "$azurite_dir/node_modules/.bin/azurite-blob" ]]; then
  echo "setup: installing Azurite from its lock file" >&2
  npm ci --prefix "$azurite_dir" --no-audit --no-fund --loglevel=error >/dev/null
fi
