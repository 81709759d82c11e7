#pragma once

#include <memory>

#include "streaming/destination.hpp"
#include "streaming/tensor_memory.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// Host memory: the caller's places where StreamerOptions::placement gives one (they take none
/// of the budget), the stream's recycled pool for the rest and for every run's scratch.
class HostDestination final : public Destination {
 public:
  /// `placement` may be empty: every tensor then lands in `pool`.
  HostDestination(TensorPlacement placement, std::shared_ptr<TensorMemoryPool> pool);

  Claim claim(const PlannedRead& read) override;
  void land(ReadJob& job, Claim claim) override;
  void hand_over(const std::shared_ptr<std::byte>& memory) override;
  void close() override;
  std::uint64_t fresh_bytes() const override { return pool_->fresh_bytes(); }

 private:
  const TensorPlacement placement_;
  const std::shared_ptr<TensorMemoryPool> pool_;
};

}  // namespace tensorstream::detail
