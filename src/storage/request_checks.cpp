#include "storage/request_checks.hpp"

#include <limits>

#include "tensorstream/error.hpp"

namespace tensorstream {

void check_bucket_key(const std::string& url, const std::string& key, std::string_view service) {
  if (key.size() < 2 || key.front() != '/') {
    throw InvalidArgument(url + ": " + std::string(service) +
                          " keys are paths starting with '/' and naming an object");
  }
}

void check_byte_range(const std::string& url, std::uint64_t offset, std::size_t size) {
  if (offset > std::numeric_limits<std::uint64_t>::max() - size) {
    throw InvalidArgument(url + ": byte range at offset " + std::to_string(offset) + " overflows");
  }
}

}  // namespace tensorstream
