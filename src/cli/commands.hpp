#pragma once

#include <CLI/App.hpp>

namespace tensorstream::cli {

/// `tensorstream stream URL ...`: streams every tensor and drops it, reporting progress.
void register_stream_command(CLI::App& app);

/// `tensorstream inspect URL ...`: prints the headers without loading tensors.
void register_inspect_command(CLI::App& app);

/// `tensorstream gen-model DIR ...`: writes a synthetic Llama-shaped checkpoint.
void register_gen_model_command(CLI::App& app);

}  // namespace tensorstream::cli
