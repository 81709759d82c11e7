#include "base/ordered_name_patterns.hpp"

#include <algorithm>

namespace tensorstream::detail {

const NameFilter* OrderedNamePatterns::decider(const std::string& name) const {
  const auto last = std::find_if(filters.rbegin(), filters.rend(), [&](const NameFilter& filter) {
    return matches(filter.pattern, name);
  });
  return last == filters.rend() ? nullptr : &*last;
}

bool OrderedNamePatterns::selects(const std::string& name) const {
  const NameFilter* filter = decider(name);
  if (filter) return filter->include;
  return filters.empty() || !filters.front().include;
}

std::string OrderedNamePatterns::spelled() const {
  std::string text;
  for (const auto& filter : filters) {
    if (!text.empty()) text += ' ';
    text += spelled_patterns(filter.include ? "--include" : "--exclude", {filter.pattern});
  }
  return text;
}

NamePatterns OrderedNamePatterns::unordered() const {
  NamePatterns patterns;
  for (const auto& filter : filters) {
    (filter.include ? patterns.include : patterns.exclude).push_back(filter.pattern);
  }
  return patterns;
}

bool OrderedNamePatterns::order_matters() const {
  const auto exclude = std::find_if(filters.begin(), filters.end(),
                                    [](const NameFilter& filter) { return !filter.include; });
  return std::any_of(exclude, filters.end(), [](const NameFilter& filter) { return filter.include; });
}

std::string OrderedNamePatterns::nothing_taken(const std::vector<std::string>& names,
                                               std::string_view what) const {
  const NamePatterns lists = unordered();
  std::vector<bool> decided(filters.size());
  bool included = false;  // whether some name matched an include that a later exclude overrode
  for (const auto& name : names) {
    const NameFilter* filter = decider(name);
    if (!filter) continue;  // left out for matching no include
    decided[static_cast<std::size_t>(filter - filters.data())] = true;
    included = included || std::any_of(lists.include.begin(), lists.include.end(),
                                       [&](const std::string& p) { return matches(p, name); });
  }
  // Nothing is taken, so every filter that decided is an exclude.
  std::vector<std::string> blamed;
  for (std::size_t i = 0; i < filters.size(); ++i) {
    if (decided[i]) blamed.push_back(filters[i].pattern);
  }
  if (blamed.empty()) {
    return "no " + std::string(what) + " matches " + spelled_patterns("--include", lists.include);
  }
  return left_out_by(blamed, included ? lists.include : std::vector<std::string>{}, what,
                     "filters apply in order, the last one a path matches deciding");
}

}  // namespace tensorstream::detail
