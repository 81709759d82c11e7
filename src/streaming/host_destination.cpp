#include "streaming/host_destination.hpp"

#include <utility>

namespace tensorstream::detail {

HostDestination::HostDestination(TensorPlacement placement,
                                 std::shared_ptr<TensorMemoryPool> pool)
    : placement_(std::move(placement)), pool_(std::move(pool)) {}

Destination::Claim HostDestination::claim(const PlannedRead& read) {
  Claim claim{std::vector<std::shared_ptr<std::byte>>(read.tensors.size()), read.memory()};
  for (std::size_t i = 0; placement_ && i < read.tensors.size(); ++i) {
    claim.places[i] = placement_(*read.tensors[i], read.file->url);
    if (claim.places[i] != nullptr) claim.budget_bytes -= read.tensors[i]->byte_size();
  }
  return claim;
}

void HostDestination::land(ReadJob& job, Claim claim) {
  // Each allocation gives its own bytes back to the budget: together what the claim acquired.
  // A place is the caller's, kept alive by its owner's share for as long as it may be written.
  const auto memory_for = [&](std::size_t i) -> std::shared_ptr<std::byte> {
    if (claim.places[i] == nullptr) return pool_->allocate(job.read.tensors[i]->byte_size());
    return std::move(claim.places[i]);
  };
  if (job.read.coalesced()) {
    job.data = pool_->allocate(job.read.length);
    for (std::size_t i = 0; i < job.read.tensors.size(); ++i) job.copies.push_back(memory_for(i));
  } else {
    job.data = memory_for(0);
  }
}

void HostDestination::hand_over(const std::shared_ptr<std::byte>& memory) {
  pool_->detach(memory);
}

void HostDestination::close() { pool_->close(); }

}  // namespace tensorstream::detail
