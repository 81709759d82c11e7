#pragma once
// --include and --exclude: the tensors a command that reads a checkpoint takes (stream, inspect,
// bench).

#include <CLI/App.hpp>
#include <string>
#include <vector>

#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::cli {

/// What --include and --exclude say.
struct TensorFilterFlags {
  std::vector<std::string> include;
  std::vector<std::string> exclude;

  /// Whether either was given.
  bool any() const { return !include.empty() || !exclude.empty(); }
};

/// Adds --include and --exclude (each repeatable) to `command`, storing into `flags`.
void add_tensor_filter_flags(CLI::App& command, TensorFilterFlags& flags);

/// The selection the flags make; unset when none was given.
TensorSelection tensor_selection(const TensorFilterFlags& flags);

/// Throws StorageError naming `url` when the flags were given and selected no tensor: a pattern
/// that matches nothing is a typo more often than a wish to read nothing.
void require_selected(const TensorFilterFlags& flags, std::uint64_t tensors, const std::string& url);

}  // namespace tensorstream::cli
