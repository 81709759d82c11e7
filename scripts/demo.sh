#!/usr/bin/env bash
# The Quick start's main job: sets up and builds the command-line tool alone (the libraries
# without libtorch; no tests, benchmarks or examples), writes a synthetic Llama-shaped checkpoint
# and streams it from local files, showing progress and throughput.
# PRESET (tiny or llama-7b-4layers, default llama-7b-4layers), MODEL_DIR and BUILD_DIR (default
# build-tool) can be overridden.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --tool
build_dir="${BUILD_DIR:-build-tool}"
BUILD_DIR="$build_dir" TARGETS=tensorstream_cli \
  CMAKE_ARGS="-DTENSORSTREAM_WITH_TORCH=OFF ${CMAKE_ARGS:-}" bash scripts/build.sh
tool="$build_dir/tensorstream"
model_dir="${MODEL_DIR:-${TMPDIR:-/tmp}/tensorstream-demo}"
"$tool" gen-model "$model_dir" --preset "${PRESET:-llama-7b-4layers}" --shards 2 --index
"$tool" inspect "$model_dir" | tail -n 1
"$tool" stream "file://$model_dir/"
echo "demo: the tool is $tool; try $tool --help" >&2
