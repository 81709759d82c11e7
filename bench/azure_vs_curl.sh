#!/usr/bin/env bash
# `tensorstream stream az://…` against its ceiling, 32 parallel `curl` range GETs of the same blob
# to /dev/null, side by side on one loopback Azurite: the two alternate which goes first, each in
# a fresh process, and both read with the same container SAS token (so Azurite checks the same
# signature for both). Prints every timing with the CPU seconds Azurite spent in it (Azurite is
# one Node.js thread: a run during which it is busy all the time is bound by the server,
# whoever the client), and the medians' ratio.
#
#   bash bench/azure_vs_curl.sh [ROUNDS] [PRESET]     (default 5, llama-7b-4layers)
#
# TS_ARGS adds flags to the stream command, e.g. TS_ARGS="--chunk-size 64MiB".
#
# Needs curl, Azurite and the Azure SDK for Python (scripts/setup.sh installs them). The model
# and Azurite's blobs stay in a temporary directory under TMPDIR and in Azurite's memory.
set -euo pipefail
rounds="${1:-5}"
preset="${2:-llama-7b-4layers}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="${TENSORSTREAM_CLI:-$root/build/tensorstream}"
azurite="$root/third_party/azurite/node_modules/azurite/dist/src/blob/main.js"
tool="$root/tests/support/azure_blob_tool.py"
parts=32

work="$(mktemp -d)"
server=""
cleanup() {
  local status=$?
  if [[ -n "$server" ]]; then
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

node "$azurite" --blobHost 127.0.0.1 --blobPort 0 --inMemoryPersistence --skipApiVersionCheck \
  --disableTelemetry --disableProductStyleUrl >"$work/azurite.log" 2>&1 &
server=$!
for _ in $(seq 200); do
  grep -q "successfully listens on" "$work/azurite.log" && break
  sleep 0.1
done
port="$(sed -n 's|.*successfully listens on http://127.0.0.1:\([0-9]*\).*|\1|p' "$work/azurite.log")"
endpoint="http://127.0.0.1:$port/devstoreaccount1"
key="Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
export AZURE_STORAGE_CONNECTION_STRING="AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=$endpoint"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY

"$cli" gen-model "$work/model" --preset "$preset" >/dev/null
blob="$work/model/model.safetensors"
bytes="$(stat -c %s "$blob")"
/usr/bin/python3 "$tool" create-container models
/usr/bin/python3 "$tool" put models model.safetensors "$blob"
sas="$(/usr/bin/python3 "$tool" container-sas models --permissions rl)"
unset AZURE_STORAGE_CONNECTION_STRING
echo "blob: $preset, $bytes bytes; Azurite on port $port"

# shellcheck source=bench/server_timing.sh
source "$root/bench/server_timing.sh"
curl_ranges() {
  local part=$(((bytes + parts - 1) / parts)) i first last
  for ((i = 0; i < parts; ++i)); do
    first=$((i * part))
    last=$((first + part - 1 < bytes - 1 ? first + part - 1 : bytes - 1))
    curl -sSf -o /dev/null -r "$first-$last" "$endpoint/models/model.safetensors?$sas" &
  done
  wait
}
ts_stream() {
  AZURE_STORAGE_SAS_TOKEN="$sas" "$cli" stream az://models/model.safetensors \
    --endpoint-url "$endpoint" --concurrency "$parts" --progress never ${TS_ARGS:-}
}

declare -A times
for ((round = 1; round <= rounds; ++round)); do
  if ((round % 2)); then order=(curl ts); else order=(ts curl); fi
  line="round $round:"
  for run in "${order[@]}"; do
    if [[ $run == curl ]]; then t="$(seconds curl_ranges)"; else t="$(seconds ts_stream)"; fi
    times[$run]+=" ${t%/*}"
    line+=" $run ${t%/*} s (Azurite ${t#*/} cpu-s),"
  done
  echo "$line"
done

python3 - "$bytes" "${times[curl]}" "${times[ts]}" <<'PY'
import statistics, sys
size = int(sys.argv[1])
curl, ts = (statistics.median(float(t) for t in arg.split()) for arg in sys.argv[2:])
print(f"medians: curl x32 {curl:.2f} s ({size / curl / 2**20:.0f} MiB/s), tensorstream {ts:.2f} s "
      f"({size / ts / 2**20:.0f} MiB/s); tensorstream / curl ceiling {curl / ts:.2f}")
PY
