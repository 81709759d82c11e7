#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "streaming/read_job.hpp"
#include "streaming/read_plan.hpp"

namespace tensorstream::detail {

/// Owns the memory a stream's bytes land in, read by read, so that the scheduler only asks how
/// much of the budget a read takes and then for its memory. Memory it hands out is shared: it
/// stays alive for as long as anything may still write it (a broadcast landing after the stream
/// failed, too) or a consumer holds a tensor in it.
///
/// The stream's own destination is HostDestination; a device's pinned staging memory would be
/// another, with no change to the scheduler. Called on the stream's strand, except where noted.
class Destination {
 public:
  /// The memory a read is promised before the budget is asked for the rest.
  struct Claim {
    /// Per tensor of the read: memory the destination already has for it (a caller's place),
    /// or nullptr where it must be allocated from the budget.
    std::vector<std::shared_ptr<std::byte>> places;
    /// Bytes of the budget the read takes: the tensors without a place, and a run's scratch.
    std::uint64_t budget_bytes = 0;
  };

  virtual ~Destination() = default;

  /// What `read` needs of the budget, with whatever memory it has for its tensors already.
  virtual Claim claim(const PlannedRead& read) = 0;

  /// Gives `job` (whose read was claimed) its memory, once the budget granted the claim's bytes.
  virtual void land(ReadJob& job, Claim claim) = 0;

  /// The stream handed `memory` (of a tensor) to its consumer: it no longer counts as the
  /// stream's. Any thread.
  virtual void hand_over(const std::shared_ptr<std::byte>& memory) = 0;

  /// The stream has ended: memory kept for reuse goes. Any thread, once.
  virtual void close() = 0;

  /// Bytes of memory it mapped afresh so far, rather than recycled. Any thread.
  virtual std::uint64_t fresh_bytes() const = 0;
};

}  // namespace tensorstream::detail
