#!/usr/bin/env bash
# Installs everything tensorstream needs to build and test on Debian 12 (clang-15 and libFuzzer
# only for the fuzz targets of scripts/fuzz.sh; python3-dev, pybind11-dev, python3-torch and
# python3-pytest for the Python package). Idempotent: packages already present are
# skipped, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates openssl
  libboost1.81-dev liburing-dev libssl-dev libtorch-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libpugixml-dev
  nginx-light python3-botocore librsvg2-bin
  python3-dev pybind11-dev python3-torch python3-pytest
  libgloo-dev
  clang-15 libfuzzer-15-dev
)
# s3rver runs on Node.js; a machine that already has node and npm (say from NodeSource) keeps them.
command -v npm >/dev/null || packages+=(nodejs npm)

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

# The S3 server of the tests, pinned by third_party/s3rver/package-lock.json. The registry is
# needed here, at setup, never while tests run.
s3rver_dir="$(dirname "$0")/../third_party/s3rver"
if [[ ! -x "$s3rver_dir/node_modules/.bin/s3rver" ]]; then
  echo "setup: installing s3rver from its lock file" >&2
  npm ci --prefix "$s3rver_dir" --no-audit --no-fund --loglevel=error >/dev/null
fi
