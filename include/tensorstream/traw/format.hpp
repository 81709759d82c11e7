#pragma once
/// @file
/// The TRAW format: one tensor per object, a fixed little-endian header, then the raw bytes.
///
/// | offset     | bytes | field                                   |
/// |------------|-------|-----------------------------------------|
/// | 0          | 4     | magic `TRAW`                            |
/// | 4          | 4     | uint32 version, 1                       |
/// | 8          | 4     | uint32 ndim, 1 to 10                    |
/// | 12         | 8 × N | uint64 dims, each > 0                   |
/// | 12 + 8N    | 4     | uint32 dtype code                       |
/// | 16 + 8N    | 8     | uint64 data_size = numel × element size |
/// | 24 + 8N    |       | data_size bytes of tensor data          |

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/dtype.hpp"

namespace tensorstream::traw {

/// The most dimensions a TRAW tensor may have.
inline constexpr std::size_t max_ndim = 10;

/// The largest header there is (ndim = max_ndim). Reading the first min(object size,
/// max_header_size) bytes of an object is always enough to parse its header in one request.
inline constexpr std::size_t max_header_size = 24 + 8 * max_ndim;

/// The TRAW code of `dtype`. Codes 1-4 (F16, BF16, F32, F64) are the format's own; 101-108 (I8,
/// U8, I16, I32, I64, BOOL, F8_E4M3, F8_E5M2) are tensorstream's extension for the other types.
TENSORSTREAM_API
std::uint32_t dtype_code(Dtype dtype);

/// The dtype of TRAW code `code`, or nullopt for a code that is neither the format's nor ours.
TENSORSTREAM_API
std::optional<Dtype> dtype_of_code(std::uint32_t code);

/// A validated TRAW header.
struct TENSORSTREAM_API Header {
  std::vector<std::uint64_t> shape;  ///< 1 to max_ndim dimensions, each > 0.
  Dtype dtype = Dtype::U8;           ///< The element type.
  std::uint64_t data_size = 0;       ///< Bytes after the header: numel × element size.

  /// Bytes of the header, where the data starts: 24 + 8 × ndim.
  std::uint64_t header_size() const;

  bool operator==(const Header&) const = default;
};

/// Parses and validates the header of `object` (a URL or path, for messages), whose total size is
/// `object_size`. `prefix` holds the object's first bytes, at least min(object_size,
/// max_header_size) of them; nothing past `prefix` is read. Throws FormatError naming the object,
/// the field and its value for a wrong magic, a version other than 1, an ndim outside [1, 10], a
/// zero dimension, an unknown dtype code, a data_size other than numel × element size (or one that
/// overflows 64 bits), or an object that is shorter (truncated) or longer than header + data.
/// Throws InvalidArgument when `prefix` is longer than the object, or too short for the header it
/// declares although the object is not.
TENSORSTREAM_API
Header parse_header(std::span<const std::byte> prefix, std::uint64_t object_size,
                    std::string_view object);

/// The header of a TRAW object holding a tensor of `shape` and `dtype`; the writer follows it with
/// exactly numel × element size bytes of data. Files with codes 1-4 are byte-identical to the
/// format's reference Python writer. Throws InvalidArgument for an ndim outside [1, 10], a zero
/// dimension, or a byte size that overflows 64 bits.
TENSORSTREAM_API
std::vector<std::byte> encode_header(std::span<const std::uint64_t> shape, Dtype dtype);

}  // namespace tensorstream::traw
