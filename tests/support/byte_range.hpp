#pragma once
// The Range header as the test servers understand it.

#include <cstdint>
#include <optional>
#include <string_view>

namespace tensorstream::testing {

/// An inclusive byte range.
struct ByteRange {
  std::uint64_t first = 0;
  std::uint64_t last = 0;
};

/// Parses "bytes=a-b" or "bytes=a-" for an object of `size` bytes, clamping the end to the
/// object; anything else (suffix ranges, several ranges) counts as no Range. A range starting
/// at or past the end is returned as is, for the server to answer 416.
std::optional<ByteRange> parse_range(std::string_view header, std::uint64_t size);

}  // namespace tensorstream::testing
