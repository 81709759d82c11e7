#include "tensorstream/streaming/chunk_plan.hpp"

#include <algorithm>

namespace tensorstream {

std::uint64_t chunk_count(std::uint64_t byte_size, std::uint64_t chunk_size) {
  return byte_size / chunk_size + (byte_size % chunk_size != 0 ? 1 : 0);
}

Chunk chunk_at(std::uint64_t byte_size, std::uint64_t chunk_size, std::uint64_t index) {
  const std::uint64_t offset = index * chunk_size;
  return {offset, std::min(chunk_size, byte_size - offset)};
}

std::vector<Chunk> plan_chunks(std::uint64_t byte_size, std::uint64_t chunk_size) {
  const std::uint64_t count = chunk_count(byte_size, chunk_size);
  std::vector<Chunk> chunks;
  chunks.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) chunks.push_back(chunk_at(byte_size, chunk_size, i));
  return chunks;
}

}  // namespace tensorstream
