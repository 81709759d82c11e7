#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "streaming/read_plan.hpp"

namespace tensorstream::detail {

/// A read in progress: where its bytes land and the chunks still to land. The scheduler fills
/// it, the destination gives it memory, and a distributed stream broadcasts it.
struct ReadJob {
  PlannedRead read;
  /// The tensor's own memory; for a coalesced run, the scratch its tensors are copied out of.
  std::shared_ptr<std::byte> data;
  /// A coalesced run's tensors' own memory, in the order of read.tensors.
  std::vector<std::shared_ptr<std::byte>> copies;
  std::uint64_t chunks_left = 0;
  /// In a distributed stream: the member that reads it, and whether its bytes are here to
  /// broadcast (always, on a receiver, whose bytes the broadcast lands in).
  int owner = -1;
  bool ready = true;
};

}  // namespace tensorstream::detail
