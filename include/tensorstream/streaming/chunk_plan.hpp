#pragma once
/// @file
/// How a tensor's bytes are split into range reads.

#include <cstdint>
#include <vector>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// One range read of a tensor: `length` bytes at `offset` from the tensor's first byte.
struct Chunk {
  std::uint64_t offset = 0;
  std::uint64_t length = 0;

  friend bool operator==(const Chunk&, const Chunk&) = default;
};

/// Number of range reads a tensor of `byte_size` bytes needs with chunks of `chunk_size` bytes:
/// zero for a zero-byte tensor. `chunk_size` must be at least 1.
TENSORSTREAM_API
std::uint64_t chunk_count(std::uint64_t byte_size, std::uint64_t chunk_size);

/// Chunk `index` (< chunk_count) of a tensor: every chunk but the last is `chunk_size` long.
TENSORSTREAM_API
Chunk chunk_at(std::uint64_t byte_size, std::uint64_t chunk_size, std::uint64_t index);

/// Every chunk of a tensor, in order.
TENSORSTREAM_API
std::vector<Chunk> plan_chunks(std::uint64_t byte_size, std::uint64_t chunk_size);

}  // namespace tensorstream
