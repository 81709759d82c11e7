#pragma once
// Validation every network store applies to a read before sending it.

#include <cstddef>
#include <cstdint>
#include <string>

namespace tensorstream {

/// Throws InvalidArgument naming `url` when `size` bytes at `offset` run past the largest
/// representable offset, which no Range header could express.
void check_byte_range(const std::string& url, std::uint64_t offset, std::size_t size);

}  // namespace tensorstream
