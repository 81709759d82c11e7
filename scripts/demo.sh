#!/usr/bin/env bash
# The Quick start's main job: sets up, builds, writes a synthetic Llama-shaped checkpoint and
# streams it from local files, showing progress and throughput.
# PRESET (tiny or llama-7b-4layers, default llama-7b-4layers) and MODEL_DIR can be overridden.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
model_dir="${MODEL_DIR:-${TMPDIR:-/tmp}/tensorstream-demo}"
build/tensorstream gen-model "$model_dir" --preset "${PRESET:-llama-7b-4layers}" --shards 2 --index
build/tensorstream inspect "$model_dir" | tail -n 1
build/tensorstream stream "file://$model_dir/"
