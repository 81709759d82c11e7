#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "tensorstream/streaming/memory_budget.hpp"

namespace tensorstream::detail {

/// The memory tensors land in, for one stream.
///
/// Large tensors get mappings of their own with transparent huge pages requested. When such a
/// tensor dies, its mapping is kept and recycled for later tensors: for one of the same size as
/// it is, for a smaller one its head (the tail stays kept), for a larger one its pages and those
/// of other kept mappings are moved side by side (mremap) into the new mapping, and only the rest
/// is fresh. A stream whose consumer releases tensors so writes into memory that is already
/// faulted in, instead of paying a page fault and the kernel's zeroing for every page of the
/// model: what it maps afresh (fresh_bytes()) stays about its memory limit, whatever the model's
/// size. Kept mappings, memory that no tensor uses, are at most the limit (and a sixty-fourth of
/// it for page rounding): a released mapping that would exceed it is unmapped. Thread-safe;
/// tensors may die on any thread, also after the stream.
class TensorMemoryPool : public std::enable_shared_from_this<TensorMemoryPool> {
 public:
  explicit TensorMemoryPool(std::shared_ptr<MemoryBudget> budget);
  ~TensorMemoryPool();
  TensorMemoryPool(const TensorMemoryPool&) = delete;
  TensorMemoryPool& operator=(const TensorMemoryPool&) = delete;

  /// Memory for `bytes`, which the caller already acquired from the budget: 64-byte aligned, or
  /// for 1 MiB or more with a `page_offset` (below 4096) that many bytes past a page boundary,
  /// where a direct read of a file lands in place. The returned pointer gives the memory back to
  /// the pool and the bytes to the budget when its last copy dies. Never null, also for zero
  /// bytes.
  std::shared_ptr<std::byte> allocate(std::uint64_t bytes, std::uint64_t page_offset = 0);

  /// Gives the bytes of `memory`, which allocate() returned, back to the budget now rather than
  /// when it dies: the stream has handed the tensor over, and what the consumer keeps is no
  /// longer the stream's. Its mapping is still recycled when it dies, if it fits the limit
  /// beside what the budget then holds. Does nothing for memory already detached or not the
  /// pool's.
  void detach(const std::shared_ptr<std::byte>& memory);

  /// Unmaps every kept mapping; later releases unmap at once. Called when the stream ends.
  void close();

  /// Bytes of kept mappings.
  std::uint64_t kept_bytes() const;

  /// Bytes mapped afresh so far (pages the kernel faults in and zeroes), as opposed to recycled.
  std::uint64_t fresh_bytes() const;

 private:
  // The deleter of allocated memory; `counted` while the bytes are the budget's.
  struct Release {
    std::shared_ptr<TensorMemoryPool> pool;
    std::uint64_t bytes;
    std::uint64_t mapped;
    std::uint64_t page_offset;  // Of the memory handed out, in its mapping.
    bool counted = true;
    void operator()(std::byte* memory) const { pool->release(memory, *this); }
  };

  std::byte* take_mapping(std::uint64_t size);
  void release(std::byte* memory, const Release& allocation);

  const std::shared_ptr<MemoryBudget> budget_;
  mutable std::mutex mutex_;
  std::multimap<std::uint64_t, std::byte*> kept_;
  std::uint64_t kept_bytes_ = 0;
  std::atomic<std::uint64_t> fresh_bytes_{0};
  bool closed_ = false;
};

}  // namespace tensorstream::detail
