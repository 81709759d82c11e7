#include "storage/range_check.hpp"

#include <limits>

#include "tensorstream/error.hpp"

namespace tensorstream {

void check_byte_range(const std::string& url, std::uint64_t offset, std::size_t size) {
  if (offset > std::numeric_limits<std::uint64_t>::max() - size) {
    throw InvalidArgument(url + ": byte range at offset " + std::to_string(offset) + " overflows");
  }
}

}  // namespace tensorstream
