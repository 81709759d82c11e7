#pragma once
// Shapes as `tensorstream stream --json` and `inspect --json` print them.

#include <cstdint>
#include <string>
#include <vector>

namespace tensorstream::testing {

/// "[4096,11008]": a shape as a compact JSON array.
inline std::string shape_json(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i != 0) text += ',';
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

}  // namespace tensorstream::testing
