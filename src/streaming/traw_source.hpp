#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "streaming/discovery.hpp"

namespace tensorstream::detail {

/// The suffix of a TRAW object's name.
inline constexpr std::string_view traw_suffix = ".bin";

/// The name of the tensor TRAW object `key` holds: its file name without ".bin".
std::string traw_tensor_name(std::string_view key);

/// TRAW object `key` at `url`, of `size` bytes, as the engine streams it: one tensor named by
/// traw_tensor_name() whose data starts after the TRAW header. `prefix` holds the object's first
/// min(size, traw::max_header_size) bytes. Throws FormatError naming the object for an invalid
/// header (traw::parse_header) or a dimension beyond int64, which a safetensors shape holds.
SourceFile traw_source_file(std::string key, std::string url, std::uint64_t size,
                            std::span<const std::byte> prefix);

}  // namespace tensorstream::detail
