#!/usr/bin/env bash
# `tensorstream cp` against `aws s3 cp`, side by side on one s3rver over loopback: a prefix
# downloaded to local disk and a directory uploaded, the two tools alternating which goes first,
# each in a fresh process, next to the ceiling measured in the same run (parallel curl, whole
# objects). Prints every timing with the CPU seconds s3rver spent in it (on 2 cores a run whose
# s3rver is busy for most of its length is bound by the server, whoever the client), and the
# medians' ratios; checks the bytes of each download.
#
#   bash bench/cp_vs_aws.sh [ROUNDS] [PRESET] [SHARDS]     (default 3, llama-7b-4layers, 4)
#
# Needs the aws CLI, curl and s3rver (scripts/setup.sh installs it). Uses a temporary directory
# under TMPDIR for the model, the server's data and the downloads (three times the model's size).
set -euo pipefail
rounds="${1:-3}"
preset="${2:-llama-7b-4layers}"
shards="${3:-4}"
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="${TENSORSTREAM_CLI:-$root/build/tensorstream}"
s3rver="$root/third_party/s3rver/node_modules/s3rver/bin/s3rver.js"

work="$(mktemp -d)"
server=""
cleanup() {
  local status=$?
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT

mkdir -p "$work/data"
node --openssl-legacy-provider "$s3rver" -d "$work/data" -a 127.0.0.1 -p 0 \
  --configure-bucket models >"$work/s3rver.log" 2>&1 &
server=$!
for _ in $(seq 100); do
  grep -q "listening on" "$work/s3rver.log" && break
  sleep 0.1
done
port="$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$work/s3rver.log")"
export AWS_ENDPOINT_URL="http://127.0.0.1:$port" AWS_ACCESS_KEY_ID=S3RVER
export AWS_SECRET_ACCESS_KEY=S3RVER AWS_DEFAULT_REGION=us-east-1
aws="aws --only-show-errors"

"$cli" gen-model "$work/model" --preset "$preset" --shards "$shards" --index >/dev/null
bytes="$(du -sb "$work/model" | cut -f1)"
$aws s3 cp --recursive "$work/model" s3://models/src/
files=("$work"/model/*)
echo "model: $preset, $shards shards, ${#files[@]} files, $bytes bytes; s3rver on port $port"

# shellcheck source=bench/server_timing.sh
source "$root/bench/server_timing.sh"
same_bytes() { # DIR: fails unless DIR holds the model's files, byte for byte
  for file in "${files[@]}"; do cmp -s "$file" "$1/$(basename "$file")" || {
    echo "bytes differ: $1/$(basename "$file")" >&2
    exit 1
  }; done
}
curl_get() {
  for file in "${files[@]}"; do
    curl -sSf -o /dev/null "$AWS_ENDPOINT_URL/models/src/$(basename "$file")" &
  done
  wait
}
curl_put() {
  for file in "${files[@]}"; do
    curl -sSf -o /dev/null -X PUT -T "$file" "$AWS_ENDPOINT_URL/models/curl/$(basename "$file")" &
  done
  wait
}
aws_down() { rm -rf "$work/down"; $aws s3 cp --recursive s3://models/src/ "$work/down"; }
ts_down() { rm -rf "$work/down"; "$cli" cp -r s3://models/src/ "$work/down" --progress never; }
aws_up() { $aws s3 cp --recursive "$work/model" s3://models/up/; }
ts_up() { "$cli" cp -r "$work/model" s3://models/up/ --progress never; }
clear_up() { $aws s3 rm --recursive s3://models/up/ >/dev/null; $aws s3 rm --recursive s3://models/curl/ >/dev/null; }

declare -A times
for ((round = 1; round <= rounds; ++round)); do
  if ((round % 2)); then order=(aws ts); else order=(ts aws); fi
  t="$(seconds curl_get)"
  times[curl_down]+=" ${t%/*}"
  line="round $round: curl down ${t%/*} s (s3rver ${t#*/} cpu-s),"
  t="$(seconds curl_put)"
  times[curl_up]+=" ${t%/*}"
  line+=" curl up ${t%/*} s (${t#*/}),"
  clear_up
  for tool in "${order[@]}"; do
    t="$(seconds "${tool}_down")"
    same_bytes "$work/down"
    times[${tool}_down]+=" ${t%/*}"
    line+=" $tool down ${t%/*} s (${t#*/}),"
  done
  for tool in "${order[@]}"; do
    t="$(seconds "${tool}_up")"
    clear_up
    times[${tool}_up]+=" ${t%/*}"
    line+=" $tool up ${t%/*} s (${t#*/}),"
  done
  echo "$line"
done

python3 - "$bytes" "${times[curl_down]}" "${times[aws_down]}" "${times[ts_down]}" \
  "${times[curl_up]}" "${times[aws_up]}" "${times[ts_up]}" <<'PY'
import statistics, sys
size = int(sys.argv[1])
curl_down, aws_down, ts_down, curl_up, aws_up, ts_up = (
    statistics.median(float(t) for t in arg.split()) for arg in sys.argv[2:])
for name, curl, aws, ts in (("download", curl_down, aws_down, ts_down),
                            ("upload", curl_up, aws_up, ts_up)):
    print(f"{name}: medians curl {curl:.2f} s, aws {aws:.2f} s, tensorstream {ts:.2f} s "
          f"({size / ts / 2**20:.0f} MiB/s); tensorstream / aws {aws / ts:.2f}x, "
          f"of the curl ceiling {curl / ts:.0%}")
PY
