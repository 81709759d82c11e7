#include "base/name_patterns.hpp"

#include <fnmatch.h>

#include <algorithm>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {
namespace {

constexpr std::string_view exclude_wins = "an --exclude wins over every --include";

}  // namespace

bool matches(const std::string& pattern, const std::string& name) {
  return ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

std::string spelled_patterns(std::string_view flag, const std::vector<std::string>& patterns) {
  std::string text;
  for (const auto& pattern : patterns) {
    if (!text.empty()) text += ' ';
    text += std::string(flag) + " '" + pattern + "'";
  }
  return text;
}

std::string left_out_by(const std::vector<std::string>& excludes,
                        const std::vector<std::string>& includes, std::string_view what,
                        std::string_view rule) {
  std::string text = spelled_patterns("--exclude", excludes) +
                     (excludes.size() == 1 ? " leaves" : " leave") + " out every " +
                     std::string(what);
  if (includes.empty()) return text;
  return text + " that " + spelled_patterns("--include", includes) +
         (includes.size() == 1 ? " takes" : " take") + " (" + std::string(rule) + ")";
}

bool NamePatterns::selects(const std::string& name) const {
  const auto match = [&](const std::string& pattern) { return matches(pattern, name); };
  return (include.empty() || std::any_of(include.begin(), include.end(), match)) &&
         std::none_of(exclude.begin(), exclude.end(), match);
}

std::string NamePatterns::spelled() const {
  const std::string includes = spelled_patterns("--include", include);
  const std::string excludes = spelled_patterns("--exclude", exclude);
  return includes + (includes.empty() || excludes.empty() ? "" : " ") + excludes;
}

void NamePatterns::check(std::string_view what) const {
  for (const auto* patterns : {&include, &exclude}) {
    if (std::any_of(patterns->begin(), patterns->end(), [](const auto& p) { return p.empty(); })) {
      throw InvalidArgument("an empty pattern matches no " + std::string(what));
    }
  }
}

std::string NamePatterns::nothing_taken(const std::vector<std::string>& names,
                                        std::string_view what) const {
  std::vector<const std::string*> included;
  for (const auto& name : names) {
    const auto match = [&](const std::string& pattern) { return matches(pattern, name); };
    if (include.empty() || std::any_of(include.begin(), include.end(), match)) {
      included.push_back(&name);
    }
  }
  if (included.empty()) return "no " + std::string(what) + " matches " + spelled();
  // The excludes, in their order, that each leave out a name no earlier one did: one pattern
  // where one suffices, as it usually does ('*').
  std::vector<std::string> blamed;
  for (const auto& pattern : exclude) {
    const auto before = included.size();
    std::erase_if(included, [&](const std::string* name) { return matches(pattern, *name); });
    if (included.size() != before) blamed.push_back(pattern);
  }
  return left_out_by(blamed, include, what, exclude_wins);
}

std::string NamePatterns::nothing_taken(std::string_view what) const {
  std::vector<std::string> everything;
  std::copy_if(exclude.begin(), exclude.end(), std::back_inserter(everything),
               [](const std::string& pattern) {
                 return std::all_of(pattern.begin(), pattern.end(), [](char c) { return c == '*'; });
               });
  if (everything.empty()) return "no " + std::string(what) + " matches " + spelled();
  return left_out_by({everything.front()}, include, what, exclude_wins);
}

}  // namespace tensorstream::detail
