#include "streaming/tensor_memory.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <new>
#include <vector>

namespace tensorstream::detail {
namespace {

// Smaller tensors come from malloc, which recycles memory well enough on its own.
constexpr std::uint64_t mapping_threshold = 1ull << 20;
constexpr std::size_t alignment = 64;

// A zero-byte tensor still needs a valid pointer for libtorch.
alignas(alignment) std::byte empty_tensor_storage[alignment];

constexpr std::uint64_t page_size = 4096;

std::uint64_t page_round(std::uint64_t bytes) { return (bytes + page_size - 1) / page_size * page_size; }

std::byte* map(std::uint64_t size) {
  void* memory = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  ::madvise(memory, size, MADV_HUGEPAGE);
  return static_cast<std::byte*>(memory);
}

}  // namespace

TensorMemoryPool::TensorMemoryPool(std::shared_ptr<MemoryBudget> budget)
    : budget_(std::move(budget)) {}

TensorMemoryPool::~TensorMemoryPool() { close(); }

// A mapping of exactly `size` bytes (a multiple of the page size), recycled where possible.
std::byte* TensorMemoryPool::take_mapping(std::uint64_t size) {
  std::vector<std::pair<std::byte*, std::uint64_t>> unmap;
  std::byte* memory = nullptr;
  std::uint64_t grow_from = 0;
  {
    std::lock_guard lock(mutex_);
    if (auto fit = kept_.lower_bound(size); fit != kept_.end()) {
      const auto [kept_size, kept_memory] = *fit;
      kept_.erase(fit);
      kept_bytes_ -= kept_size;
      memory = kept_memory;
      if (kept_size - size >= mapping_threshold) {
        kept_.emplace(kept_size - size, kept_memory + size);
        kept_bytes_ += kept_size - size;
      } else if (kept_size > size) {
        unmap.emplace_back(kept_memory + size, kept_size - size);
      }
    } else {
      // New pages are needed: grow the largest kept mapping, whose pages come along, and unmap
      // the smallest others until what stays kept fits beside the live tensors (the budget
      // already counts this one).
      if (!kept_.empty()) {
        auto largest = std::prev(kept_.end());
        memory = largest->second;
        grow_from = largest->first;
        kept_bytes_ -= largest->first;
        kept_.erase(largest);
      }
      while (!kept_.empty() && budget_->used() + kept_bytes_ > budget_->limit()) {
        auto smallest = kept_.begin();
        unmap.emplace_back(smallest->second, smallest->first);
        kept_bytes_ -= smallest->first;
        kept_.erase(smallest);
      }
    }
  }
  for (const auto& [mapping, mapping_size] : unmap) ::munmap(mapping, mapping_size);
  if (memory == nullptr) return map(size);
  if (grow_from != 0) {
    void* grown = ::mremap(memory, grow_from, size, MREMAP_MAYMOVE);
    if (grown == MAP_FAILED) {
      ::munmap(memory, grow_from);
      return map(size);
    }
    ::madvise(grown, size, MADV_HUGEPAGE);
    memory = static_cast<std::byte*>(grown);
  }
  return memory;
}

std::shared_ptr<std::byte> TensorMemoryPool::allocate(std::uint64_t bytes) {
  std::byte* memory = nullptr;
  const std::uint64_t mapped = bytes >= mapping_threshold ? page_round(bytes) : 0;
  try {
    if (bytes == 0) {
      memory = empty_tensor_storage;
    } else if (mapped == 0) {
      const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
      memory = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
      if (memory == nullptr) throw std::bad_alloc();
    } else {
      memory = take_mapping(mapped);
    }
  } catch (...) {
    budget_->release(bytes);
    throw;
  }
  return std::shared_ptr<std::byte>(memory, Release{shared_from_this(), bytes, mapped});
}

void TensorMemoryPool::detach(const std::shared_ptr<std::byte>& memory) {
  // The caller's reference keeps the deleter from running meanwhile.
  Release* allocation = std::get_deleter<Release>(memory);
  if (allocation == nullptr || allocation->pool.get() != this || !allocation->counted) return;
  allocation->counted = false;
  budget_->release(allocation->bytes);
}

void TensorMemoryPool::release(std::byte* memory, const Release& allocation) {
  if (allocation.mapped != 0) {
    std::unique_lock lock(mutex_);
    // Detached memory was not the budget's: keeping it must still leave the limit unexceeded.
    const bool fits =
        allocation.counted ||
        budget_->used() + kept_bytes_ + allocation.mapped <= budget_->limit();
    if (closed_ || !fits) {
      lock.unlock();
      ::munmap(memory, allocation.mapped);
    } else {
      kept_.emplace(allocation.mapped, memory);
      kept_bytes_ += allocation.mapped;
    }
  } else if (allocation.bytes != 0) {
    std::free(memory);
  }
  if (allocation.counted) budget_->release(allocation.bytes);
}

void TensorMemoryPool::close() {
  std::multimap<std::uint64_t, std::byte*> kept;
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
    kept.swap(kept_);
    kept_bytes_ = 0;
  }
  for (const auto& [size, mapping] : kept) ::munmap(mapping, size);
}

std::uint64_t TensorMemoryPool::kept_bytes() const {
  std::lock_guard lock(mutex_);
  return kept_bytes_;
}

}  // namespace tensorstream::detail
