#pragma once
// Counts in the tool's sentences: "1 tensor", "2 tensors", "0 files".

#include <cstdint>
#include <string>
#include <string_view>

namespace tensorstream::cli {

/// `count` and the noun for it: `singular` for one, else `plural` (by default `singular` + "s").
inline std::string counted(std::uint64_t count, std::string_view singular,
                           std::string_view plural = {}) {
  std::string text = std::to_string(count) + ' ';
  if (count == 1) return text.append(singular);
  if (plural.empty()) return text.append(singular).append("s");
  return text.append(plural);
}

}  // namespace tensorstream::cli
