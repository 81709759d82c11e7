#include "streaming/read_owners.hpp"

#include <algorithm>
#include <cstdint>

namespace tensorstream::detail {

std::vector<int> assign_owners(const std::vector<PlannedRead>& reads, int members) {
  std::vector<std::uint64_t> bytes(static_cast<std::size_t>(members), 0);
  std::vector<int> owners;
  owners.reserve(reads.size());
  for (const PlannedRead& read : reads) {
    const auto least = std::min_element(bytes.begin(), bytes.end());
    *least += read.length;
    owners.push_back(static_cast<int>(least - bytes.begin()));
  }
  return owners;
}

}  // namespace tensorstream::detail
