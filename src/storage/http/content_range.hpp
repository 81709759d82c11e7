#pragma once
// The Content-Range header of 206 and 416 responses.

#include <cstdint>
#include <optional>
#include <string_view>

namespace tensorstream {

/// "bytes first-last/total", "bytes first-last/*" or "bytes */total".
struct ContentRange {
  std::optional<std::uint64_t> first;  ///< Absent for "bytes */total".
  std::optional<std::uint64_t> last;   ///< Inclusive; absent for "bytes */total".
  std::optional<std::uint64_t> total;  ///< Absent for "/*".

  /// Parses a header value; nullopt when it is not a well-formed byte range.
  static std::optional<ContentRange> parse(std::string_view text);
};

}  // namespace tensorstream
