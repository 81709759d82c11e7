#!/usr/bin/env bash
# Installs everything tensorstream needs to build and test on Debian 12. Idempotent: packages
# already present are skipped, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates openssl
  libboost1.81-dev liburing-dev libssl-dev libtorch-dev libsimdjson-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  nginx-light
)

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
