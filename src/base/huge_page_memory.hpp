#pragma once
// Anonymous memory with transparent huge pages asked for, as tensors, the cache's copies waiting
// for its writers and the bench's buffers use: where the system allows it (`enabled` set to
// `madvise` or `always`), fresh memory faults in 2 MiB at a time rather than 4 KiB.

#include <cstddef>

namespace tensorstream::detail {

/// Maps `size` bytes of anonymous memory, huge pages asked for; throws std::bad_alloc when the
/// kernel refuses. munmap() frees it.
std::byte* map_huge_page_memory(std::size_t size);

/// Such memory, owned: unmapped when destroyed.
class HugePageMemory {
 public:
  /// Maps `size` bytes; throws std::bad_alloc when the kernel refuses.
  explicit HugePageMemory(std::size_t size);
  ~HugePageMemory();
  HugePageMemory(HugePageMemory&& other) noexcept;
  HugePageMemory& operator=(HugePageMemory&& other) noexcept;

  std::byte* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  std::byte* data_;
  std::size_t size_;
};

}  // namespace tensorstream::detail
