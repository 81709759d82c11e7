#include "storage/relative_key.hpp"

#include <algorithm>

namespace tensorstream::detail {

bool is_relative_key_inside(std::string_view key) {
  if (key.empty() || key.find('\0') != std::string_view::npos) return false;
  std::size_t start = 0;
  for (;;) {
    const auto end = std::min(key.find('/', start), key.size());
    const auto segment = key.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") return false;
    if (end == key.size()) return true;
    start = end + 1;
  }
}

}  // namespace tensorstream::detail
