#pragma once
/// @file
/// The element types of the safetensors format.

#include <cstddef>
#include <optional>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// A safetensors element type. libtorch 1.13 has no float8 types: F8_E5M2 and F8_E4M3 tensors are
/// yielded as uint8 tensors of the same shape, and the original type is reported alongside.
enum class Dtype { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E5M2, F8_E4M3 };

/// The dtype named by a safetensors header string ("BF16"), or nullopt for an unknown name.
TENSORSTREAM_API
std::optional<Dtype> parse_dtype(std::string_view name);

/// The safetensors name of `dtype` ("BF16").
TENSORSTREAM_API
std::string_view dtype_name(Dtype dtype);

/// Bytes per element of `dtype`.
TENSORSTREAM_API
std::size_t element_size(Dtype dtype);

}  // namespace tensorstream
