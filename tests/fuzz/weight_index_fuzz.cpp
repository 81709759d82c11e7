// The input is a model.safetensors.index.json.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "streaming/weight_index.hpp"
#include "tensorstream/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  try {
    const auto index = tensorstream::detail::parse_weight_index(json, "fuzz/index.json");
    // An accepted index names files inside its own directory, each with at least one tensor.
    for (const auto& [file, tensors] : index) {
      if (file.empty() || file.front() == '/' || tensors.empty()) __builtin_trap();
    }
  } catch (const tensorstream::FormatError&) {
  }
  return 0;
}
