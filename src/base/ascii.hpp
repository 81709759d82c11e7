#pragma once
// ASCII case folding and trimming for protocol text (header names, URL schemes and hosts, error
// codes), which must not follow the process locale.

#include <string>
#include <string_view>

namespace tensorstream {

/// `text` with A-Z turned into a-z and every other byte kept.
inline std::string ascii_lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

/// `text` without the spaces, tabs, CRs and LFs at its ends.
inline std::string_view ascii_trim(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace tensorstream
