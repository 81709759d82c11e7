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

std::byte* map(std::uint64_t bytes) {
  void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) throw std::bad_alloc();
  ::madvise(memory, bytes, MADV_HUGEPAGE);
  return static_cast<std::byte*>(memory);
}

}  // namespace

TensorMemoryPool::TensorMemoryPool(std::shared_ptr<MemoryBudget> budget)
    : budget_(std::move(budget)) {}

TensorMemoryPool::~TensorMemoryPool() { close(); }

std::shared_ptr<std::byte> TensorMemoryPool::allocate(std::uint64_t bytes) {
  std::byte* memory = nullptr;
  try {
    if (bytes == 0) {
      memory = empty_tensor_storage;
    } else if (bytes < mapping_threshold) {
      const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
      memory = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
      if (memory == nullptr) throw std::bad_alloc();
    } else {
      std::vector<std::pair<std::byte*, std::uint64_t>> evicted;
      {
        std::lock_guard lock(mutex_);
        if (auto reuse = kept_.find(bytes); reuse != kept_.end()) {
          memory = reuse->second;
          kept_.erase(reuse);
          kept_bytes_ -= bytes;
        } else {
          // The budget already counts these bytes as used; what is kept must fit beside them.
          while (!kept_.empty() && budget_->used() + kept_bytes_ > budget_->limit()) {
            auto largest = std::prev(kept_.end());
            evicted.emplace_back(largest->second, largest->first);
            kept_bytes_ -= largest->first;
            kept_.erase(largest);
          }
        }
      }
      for (const auto& [mapping, size] : evicted) ::munmap(mapping, size);
      if (memory == nullptr) memory = map(bytes);
    }
  } catch (...) {
    budget_->release(bytes);
    throw;
  }
  return std::shared_ptr<std::byte>(memory, [bytes, pool = shared_from_this()](std::byte* p) {
    pool->release(p, bytes);
  });
}

void TensorMemoryPool::release(std::byte* memory, std::uint64_t bytes) {
  if (bytes >= mapping_threshold) {
    std::unique_lock lock(mutex_);
    if (closed_) {
      lock.unlock();
      ::munmap(memory, bytes);
    } else {
      kept_.emplace(bytes, memory);
      kept_bytes_ += bytes;
    }
  } else if (bytes != 0) {
    std::free(memory);
  }
  budget_->release(bytes);
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
