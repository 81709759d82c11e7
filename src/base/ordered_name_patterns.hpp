#pragma once
// Include and exclude globs applied in the order given, as `aws s3 cp` applies its filters.

#include <string>
#include <string_view>
#include <vector>

#include "base/name_patterns.hpp"

namespace tensorstream::detail {

/// One --include or --exclude.
struct NameFilter {
  bool include = false;
  std::string pattern;  ///< A glob, as NamePatterns reads it.
};

/// Filters applied in order, later ones winning, as `aws s3 cp` applies them, so that the aws
/// habit `--exclude '*' --include '*.json'` takes the JSON files: the last filter a name matches
/// decides. A name matching none is taken unless the first filter is an include, so that an
/// include alone takes just what it matches, as everywhere else in tensorstream (aws would take
/// every name, a leading include changing nothing there).
struct OrderedNamePatterns {
  std::vector<NameFilter> filters;  ///< In command-line order.

  bool empty() const { return filters.empty(); }

  /// Whether `name` is taken.
  bool selects(const std::string& name) const;

  /// The filters as the command line spelled them, in order: "--exclude '*' --include '*.json'".
  std::string spelled() const;

  /// The same patterns in two lists, which select the same names where no exclude comes before
  /// an include (see order_matters()).
  NamePatterns unordered() const;

  /// Whether an exclude comes before an include, where NamePatterns would select otherwise.
  bool order_matters() const;

  /// Why none of `names` (every candidate) is taken, for the error that says so; see
  /// NamePatterns::nothing_taken(), blaming here the excludes that decided.
  std::string nothing_taken(const std::vector<std::string>& names, std::string_view what) const;

 private:
  // The last filter `name` matches; null for none.
  const NameFilter* decider(const std::string& name) const;
};

}  // namespace tensorstream::detail
