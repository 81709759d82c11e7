#pragma once
// Choosing names (of tensors, of objects below a prefix) with include and exclude globs.

#include <string>
#include <string_view>
#include <vector>

namespace tensorstream::detail {

/// Include and exclude patterns, shell globs as fnmatch(3) reads them without flags: `*` also
/// matches '/' and '.', so `*.json` takes JSON files at any depth.
struct NamePatterns {
  std::vector<std::string> include;  ///< Names matching one of these; all names when empty.
  std::vector<std::string> exclude;  ///< Minus names matching one of these.

  /// Whether both lists are empty, so that every name is taken.
  bool empty() const { return include.empty() && exclude.empty(); }

  /// Whether `name` is taken.
  bool selects(const std::string& name) const;

  /// The patterns as a command line spells them, for messages: "--include '*.json' --exclude
  /// 'x*'"; empty when there are none.
  std::string spelled() const;

  /// Throws InvalidArgument for an empty pattern, which matches no `what` ("tensor name").
  void check(std::string_view what) const;
};

}  // namespace tensorstream::detail
