#pragma once
// ASCII case folding for protocol text (header names, URL schemes and hosts, error codes), which
// must not follow the process locale.

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

}  // namespace tensorstream
