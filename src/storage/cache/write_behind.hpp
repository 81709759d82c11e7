#pragma once
// The copies of fetched ranges waiting for the cache's writer threads (see CachedStore): their
// buffers, kept for reuse (fresh pages cost more than the copy), bounded by a limit in all, and
// how many are out. Reads that complete together (as a stream's do) would otherwise each wait
// for the writes queued before theirs; past the limit, a read waits for its own write, which
// holds the stream to the disk's pace.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>

#include "base/huge_page_memory.hpp"

namespace tensorstream::detail {

class WriteBehind {
 public:
  using Buffer = HugePageMemory;

  explicit WriteBehind(std::size_t limit) : limit_(limit) {}

  /// A buffer of at least `size` bytes for a copy; nullopt when that would pass the limit.
  std::optional<Buffer> take(std::size_t size);

  /// Returns the buffer of a copy that has been written (or failed to be).
  void give_back(Buffer buffer);

  /// Whether something waits for the writers (the store closing, the program exiting), which
  /// then run at normal priority.
  bool hurried() const { return hurried_.load(); }
  void hurry() { hurried_ = true; }

  /// Waits up to `patience` for every copy taken to be written, the writers hurried.
  void wait_until_written(std::chrono::seconds patience);

 private:
  std::mutex mutex_;
  std::condition_variable all_back_;
  const std::size_t limit_;
  std::size_t held_ = 0;  // capacity of every buffer, free or taken
  std::size_t out_ = 0;   // buffers taken
  std::vector<Buffer> free_;
  std::atomic<bool> hurried_{false};
};

}  // namespace tensorstream::detail
