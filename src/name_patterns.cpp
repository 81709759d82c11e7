#include "name_patterns.hpp"

#include <fnmatch.h>

#include <algorithm>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {

bool NamePatterns::selects(const std::string& name) const {
  const auto matches = [&](const std::string& pattern) {
    return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
  };
  return (include.empty() || std::any_of(include.begin(), include.end(), matches)) &&
         std::none_of(exclude.begin(), exclude.end(), matches);
}

std::string NamePatterns::spelled() const {
  std::string text;
  for (const auto& pattern : include) text += (text.empty() ? "" : " ") + ("--include '" + pattern + "'");
  for (const auto& pattern : exclude) text += (text.empty() ? "" : " ") + ("--exclude '" + pattern + "'");
  return text;
}

void NamePatterns::check(std::string_view what) const {
  for (const auto* patterns : {&include, &exclude}) {
    if (std::any_of(patterns->begin(), patterns->end(), [](const auto& p) { return p.empty(); })) {
      throw InvalidArgument("an empty pattern matches no " + std::string(what));
    }
  }
}

}  // namespace tensorstream::detail
