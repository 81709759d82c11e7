// The input is a whole safetensors file: the 8-byte length prefix, the JSON header, the data.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "tensorstream/error.hpp"
#include "tensorstream/safetensors/header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 8) return 0;
  const auto* bytes = reinterpret_cast<const std::byte*>(data);
  try {
    const std::uint64_t length =
        tensorstream::parse_header_length(std::span<const std::byte, 8>(bytes, 8), size, "fuzz");
    const std::string_view json(reinterpret_cast<const char*>(data) + 8, length);
    const tensorstream::Header header = tensorstream::parse_header(json, size, "fuzz");
    // What parse_header promises about a header it accepts: tensors in offset order, inside the
    // data region, not overlapping. A zero-byte tensor overlaps nothing, wherever it points.
    if (header.data_start != 8 + length) __builtin_trap();
    std::uint64_t previous_end = 0;
    for (const auto& tensor : header.tensors) {
      if (tensor.end < tensor.begin) __builtin_trap();
      if (tensor.end > size - header.data_start) __builtin_trap();
      if (tensor.begin == tensor.end) continue;
      if (tensor.begin < previous_end) __builtin_trap();
      previous_end = tensor.end;
    }
  } catch (const tensorstream::FormatError&) {
  }
  return 0;
}
