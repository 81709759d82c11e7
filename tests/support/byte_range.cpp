#include "support/byte_range.hpp"

#include <algorithm>
#include <charconv>

namespace tensorstream::testing {

std::optional<ByteRange> parse_range(std::string_view header, std::uint64_t size) {
  constexpr std::string_view prefix = "bytes=";
  if (!header.starts_with(prefix)) return std::nullopt;
  header.remove_prefix(prefix.size());
  const auto dash = header.find('-');
  if (dash == std::string_view::npos || dash == 0) return std::nullopt;
  ByteRange range;
  const auto first = header.substr(0, dash);
  if (std::from_chars(first.data(), first.data() + first.size(), range.first).ec != std::errc{}) {
    return std::nullopt;
  }
  const auto last = header.substr(dash + 1);
  range.last = size == 0 ? 0 : size - 1;
  if (!last.empty()) {
    std::uint64_t value = 0;
    if (std::from_chars(last.data(), last.data() + last.size(), value).ec != std::errc{} ||
        value < range.first) {
      return std::nullopt;
    }
    range.last = std::min(range.last, value);
  }
  return range;
}

}  // namespace tensorstream::testing
