#pragma once
// --progress: whether and how a long command shows its progress on stderr (stream, partition,
// serve). Stdout never carries it.

#include <CLI/App.hpp>
#include <optional>
#include <string>

#include "cli/progress_bar.hpp"

namespace tensorstream::cli {

/// Adds `--progress auto|always|never` to `command`, storing into `mode` (default "auto").
void add_progress_flag(CLI::App& command, std::string& mode);

/// The display `mode` asks for: "auto" the bar when stderr is a terminal, else plain lines, and
/// nothing when the command prints JSON (`json`), whose readers are programs, or under -q; "always" the bar,
/// also into a file or pipe; "never" nothing.
std::optional<ProgressStyle> progress_style(const std::string& mode, bool json);

}  // namespace tensorstream::cli
