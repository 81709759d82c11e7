#include "base/huge_page_memory.hpp"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace tensorstream::detail {

std::byte* map_huge_page_memory(std::size_t size) {
  void* memory = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  ::madvise(memory, size, MADV_HUGEPAGE);
  return static_cast<std::byte*>(memory);
}

HugePageMemory::HugePageMemory(std::size_t size)
    : data_(map_huge_page_memory(size)), size_(size) {}

HugePageMemory::~HugePageMemory() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

HugePageMemory::HugePageMemory(HugePageMemory&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

HugePageMemory& HugePageMemory::operator=(HugePageMemory&& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(size_, other.size_);
  return *this;
}

}  // namespace tensorstream::detail
