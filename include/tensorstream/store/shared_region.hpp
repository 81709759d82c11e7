#pragma once
/// @file
/// A region of shared memory that the store server fills once and hands to workers as a
/// descriptor: a memfd, sealed read-only for the weights.

#include <cstddef>
#include <cstdint>
#include <span>
#include <stop_token>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/store/unique_fd.hpp"

namespace tensorstream::store {

/// Owns a memfd of a fixed size (zero-filled by the kernel) and the server's mapping of it.
/// Workers map the descriptor themselves; their mappings outlive this object, since the kernel
/// keeps the memory while any mapping or descriptor refers to it.
class TENSORSTREAM_API SharedRegion {
 public:
  /// Creates the memfd `name` (its name in /proc/<pid>/fd, and in messages) of `size` bytes,
  /// close-on-exec and sealable, mapped read-write. A zero-byte region has no mapping. Throws
  /// StorageError naming the region and the errno text.
  SharedRegion(std::string name, std::uint64_t size);
  SharedRegion(SharedRegion&& other) noexcept;
  SharedRegion& operator=(SharedRegion&& other) noexcept;
  SharedRegion(const SharedRegion&) = delete;
  SharedRegion& operator=(const SharedRegion&) = delete;
  ~SharedRegion();

  /// The region, to fill. Throws StateError once sealed.
  std::span<std::byte> writable();

  /// Allocates every page of the region now (MADV_POPULATE_WRITE), a batch operation in the
  /// kernel that is many times faster than faulting the pages in one by one as bytes are first
  /// written (2.5 against 0.3 GB/s on the VMs we measure on). Thread-safe against writes to the
  /// region, so it may run beside them; not against seal_read_only(). Works in steps of
  /// populate_step bytes and checks `stop` before each, so that a load that ends or fails waits
  /// for one step at most. Returns false when stopped, or where the kernel cannot (before Linux
  /// 5.14): the pages are then allocated as they are written.
  bool populate(std::stop_token stop = {}) noexcept;

  /// The bytes populate() allocates between checks of its stop token: a few milliseconds' work.
  static constexpr std::uint64_t populate_step = 16ull << 20;

  /// Makes the region read-only for good: drops the writable mapping (F_SEAL_WRITE is refused
  /// while any writable shared mapping exists), adds F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE and
  /// F_SEAL_SEAL, then maps it read-only so that bytes() still works. Throws StateError when
  /// already sealed, StorageError naming the region and the errno text otherwise (EBUSY while
  /// someone else holds a writable mapping); the region stays writable when sealing fails.
  void seal_read_only();

  /// Fixes the region's size for good, leaving it writable: adds F_SEAL_SHRINK, F_SEAL_GROW and
  /// F_SEAL_SEAL, so that no holder of the descriptor can truncate it under another's mapping
  /// (which would kill that one with SIGBUS) or seal it against the others' writes. For regions
  /// that workers share and write, such as a KV cache. Throws StorageError naming the region and
  /// the errno text when the seals cannot be added.
  void seal_size();

  /// Whether seal_read_only() succeeded.
  bool sealed() const noexcept { return sealed_; }

  /// The region's bytes, read-only.
  std::span<const std::byte> bytes() const noexcept {
    return {static_cast<const std::byte*>(mapping_), mapping_ ? static_cast<std::size_t>(size_) : 0};
  }

  /// The memfd, still owned: pass it to workers (SCM_RIGHTS duplicates it).
  int fd() const noexcept { return fd_.get(); }
  /// Size in bytes.
  std::uint64_t size() const noexcept { return size_; }
  /// The name given at creation.
  const std::string& name() const noexcept { return name_; }

 private:
  void map(int protection);
  void unmap() noexcept;
  [[noreturn]] void fail(const std::string& operation, int error) const;

  std::string name_;
  std::uint64_t size_ = 0;
  UniqueFd fd_;
  void* mapping_ = nullptr;
  bool sealed_ = false;
};

}  // namespace tensorstream::store
