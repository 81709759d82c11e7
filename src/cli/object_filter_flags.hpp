#pragma once
// --include and --exclude for commands that take objects below a prefix (cp, ls, prefetch): globs
// over each object's path below the prefix.

#include <CLI/App.hpp>
#include <string>

#include "name_patterns.hpp"

namespace tensorstream::cli {

/// Adds --include and --exclude (each repeatable) to `command`, storing into `patterns`, which
/// must outlive parsing.
void add_object_filter_flags(CLI::App& command, tensorstream::detail::NamePatterns& patterns);

}  // namespace tensorstream::cli
