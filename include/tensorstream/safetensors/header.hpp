#pragma once
/// @file
/// Parsing and validation of a safetensors header: an 8-byte little-endian length, then JSON.

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/dtype.hpp"

namespace tensorstream {

/// Headers longer than this are rejected as corrupt (the format's own reference limit).
inline constexpr std::uint64_t max_header_length = 100ull << 20;

/// One tensor described by a header.
struct TENSORSTREAM_API TensorInfo {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  ///< Start of the tensor's bytes, relative to the data region.
  std::uint64_t end = 0;    ///< One past its last byte, relative to the data region.

  /// Bytes of the tensor (end - begin).
  std::uint64_t byte_size() const { return end - begin; }
  /// Number of elements (product of the shape; 1 for a scalar).
  std::uint64_t numel() const;
};

/// A validated header.
struct TENSORSTREAM_API Header {
  /// Offset of the data region in the object: 8 + header length.
  std::uint64_t data_start = 0;
  /// The tensors, ordered by their offset in the data region.
  std::vector<TensorInfo> tensors;
  /// The string entries of `__metadata__`.
  std::map<std::string, std::string> metadata;
};

/// Decodes the 8-byte length prefix of `object` and checks it against the limit and against
/// `object_size`. Throws FormatError naming `object`.
TENSORSTREAM_API
std::uint64_t parse_header_length(std::span<const std::byte, 8> prefix, std::uint64_t object_size,
                                  std::string_view object);

/// Parses and validates the JSON header `json` of `object`, whose total size is `object_size`.
/// Throws FormatError naming the object (and the tensor, where one is at fault) for invalid JSON,
/// unknown dtypes, bad shapes, offsets out of order, overlapping or outside the data region, a byte
/// length that is not numel × element size, or a `__metadata__.format` other than "pt".
TENSORSTREAM_API
Header parse_header(std::string_view json, std::uint64_t object_size, std::string_view object);

}  // namespace tensorstream
