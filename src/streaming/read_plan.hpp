#pragma once

#include <cstdint>
#include <vector>

#include "streaming/discovery.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// Tensors smaller than this are read together with their small neighbours: for them a round
/// trip costs far more than copying the bytes out of a shared buffer.
constexpr std::uint64_t coalesce_below = 1ull << 20;

/// Bytes between two small tensors (of unselected tensors, or padding) that a shared read may
/// carry and discard rather than split the run.
constexpr std::uint64_t max_coalesced_gap = 64 * 1024;

/// The bytes one unit of a stream's work reads: a single tensor, split into chunked range reads
/// that land in its own memory, or a run of small tensors of one file read with one range read
/// into scratch memory that each tensor is copied out of.
struct PlannedRead {
  const SourceFile* file = nullptr;
  std::vector<const TensorInfo*> tensors;  ///< One tensor, or a run in file order.
  std::uint64_t begin = 0;                 ///< First byte read, from the file's data start.
  std::uint64_t length = 0;                ///< Bytes read; a run's include the gaps.

  /// Whether the tensors are copied out of a shared read.
  bool coalesced() const { return tensors.size() > 1; }

  /// Bytes of memory the read holds at once: the tensors', plus the scratch of a run.
  std::uint64_t memory() const;
};

/// Every tensor of `files` in exactly one read, in `order`: smallest read first (the first tensors
/// are then ready within a round trip or two; ties keep file order), or in file order (`files` in
/// their order, each file's tensors by offset).
///
/// Consecutive tensors of a file (by offset) of 1 byte up to coalesce_below and at most
/// `chunk_size` bytes form runs while a run spans at most min(chunk_size, memory_limit / 4) bytes
/// (so scratch and copies stay within half the limit) and no gap exceeds max_coalesced_gap. A
/// larger tensor in between ends a run; zero-byte tensors are reads of their own and end nothing.
std::vector<PlannedRead> plan_reads(const std::vector<SourceFile>& files, std::uint64_t chunk_size,
                                    std::uint64_t memory_limit,
                                    ReadOrder order = ReadOrder::smallest_first);

}  // namespace tensorstream::detail
