#pragma once
/// @file
/// The byte budget that bounds a stream's memory.

#include <cstdint>
#include <functional>
#include <mutex>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// Counts bytes of tensor memory that are allocated and not yet released, against a limit.
///
/// Acquired when a tensor's memory is allocated, released when the last reference to that memory
/// dies (which may be on any thread, long after the stream ended). A request larger than the whole
/// limit is granted when nothing else is held, so an oversized tensor loads alone instead of never.
/// Thread-safe.
class TENSORSTREAM_API MemoryBudget {
 public:
  /// @param limit bytes that may be held at once; at least 1.
  explicit MemoryBudget(std::uint64_t limit);

  /// Takes `bytes` if they fit (or if nothing is held); returns whether it did.
  bool try_acquire(std::uint64_t bytes);

  /// Whether try_acquire(bytes) would succeed now.
  bool fits(std::uint64_t bytes) const;

  /// Gives back `bytes` taken earlier and calls the release listener.
  void release(std::uint64_t bytes);

  /// Called after every release, on the releasing thread, outside the budget's lock. Replacing
  /// it (or clearing it with an empty function) waits for a call in progress to finish, so the
  /// old listener is never called afterwards.
  void set_release_listener(std::function<void()> listener);

  /// The limit in bytes.
  std::uint64_t limit() const noexcept { return limit_; }
  /// Bytes held now.
  std::uint64_t used() const;
  /// Most bytes held at once so far.
  std::uint64_t peak() const;

 private:
  bool fits_locked(std::uint64_t bytes) const;

  const std::uint64_t limit_;
  mutable std::mutex mutex_;
  std::uint64_t used_ = 0;
  std::uint64_t peak_ = 0;
  std::mutex listener_mutex_;
  std::function<void()> listener_;
};

}  // namespace tensorstream
