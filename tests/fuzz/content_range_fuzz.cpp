// The input is the value of a Content-Range header.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "storage/http/content_range.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto range = tensorstream::ContentRange::parse(text);
  if (!range) return 0;
  // What the client relies on: either a whole range inside the total, or "*/total".
  if (range->first.has_value() != range->last.has_value()) __builtin_trap();
  if (range->first) {
    if (*range->last < *range->first) __builtin_trap();
    if (range->total && *range->last >= *range->total) __builtin_trap();
  } else if (!range->total) {
    __builtin_trap();
  }
  return 0;
}
