#pragma once
// --include and --exclude for commands that take objects below a prefix (cp, ls, prefetch): globs
// over each object's path below the prefix.

#include <CLI/App.hpp>
#include <string>

#include "base/name_patterns.hpp"
#include "base/ordered_name_patterns.hpp"

namespace tensorstream::cli {

/// How a command combines --include and --exclude, as its help says.
enum class FilterOrder {
  exclude_wins,  ///< An --exclude wins over every --include (NamePatterns).
  later_wins,    ///< The last one a path matches decides (OrderedNamePatterns).
};

/// Adds --include and --exclude (each repeatable) to `command`, storing into `patterns`, which
/// must outlive parsing.
void add_object_filter_flags(CLI::App& command, tensorstream::detail::NamePatterns& patterns,
                             FilterOrder order = FilterOrder::exclude_wins);

/// The --include and --exclude of `command`, once parsed, in the order its command line gave
/// them (cp applies them in that order, as `aws s3 cp` does).
tensorstream::detail::OrderedNamePatterns filters_in_order(const CLI::App& command);

}  // namespace tensorstream::cli
