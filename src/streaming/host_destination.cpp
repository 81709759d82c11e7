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
  // Where the store reads fastest into memory aligned as the file, the read's memory is placed
  // so: as far past an alignment boundary as its first byte is in the object.
  const SourceFile& file = *job.read.file;
  const std::uint64_t read_offset =
      file.memory_alignment == 0
          ? 0
          : (file.header.data_start + job.read.begin) % file.memory_alignment;
  // Each allocation gives its own bytes back to the budget: together what the claim acquired.
  // A place is the caller's, kept alive by its owner's share for as long as it may be written.
  const auto memory_for = [&](std::size_t i) -> std::shared_ptr<std::byte> {
    if (claim.places[i] != nullptr) return std::move(claim.places[i]);
    const std::uint64_t bytes = job.read.tensors[i]->byte_size();
    return job.read.coalesced() ? pool_->allocate(bytes) : pool_->allocate(bytes, read_offset);
  };
  if (job.read.coalesced()) {
    job.data = pool_->allocate(job.read.length, read_offset);
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
