#include "streaming/tensor_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <new>
#include <vector>

#include "base/huge_page_memory.hpp"

namespace tensorstream::detail {
namespace {

// Smaller tensors come from malloc, which recycles memory well enough on its own.
constexpr std::uint64_t mapping_threshold = 1ull << 20;
constexpr std::size_t alignment = 64;

// A zero-byte tensor still needs a valid pointer for libtorch.
alignas(alignment) std::byte empty_tensor_storage[alignment];

constexpr std::uint64_t page_size = 4096;

std::uint64_t page_round(std::uint64_t bytes) { return (bytes + page_size - 1) / page_size * page_size; }

}  // namespace

TensorMemoryPool::TensorMemoryPool(std::shared_ptr<MemoryBudget> budget)
    : budget_(std::move(budget)) {}

TensorMemoryPool::~TensorMemoryPool() { close(); }

// A mapping of exactly `size` bytes (a multiple of the page size), of recycled pages as far as
// kept mappings have them: the best-fitting kept mapping, else as many of them as it takes,
// largest first, moved side by side into one new mapping (mremap moves pages, it does not copy
// or zero them). Only what the kept mappings cannot cover is fresh.
std::byte* TensorMemoryPool::take_mapping(std::uint64_t size) {
  std::vector<std::pair<std::byte*, std::uint64_t>> pieces;  // Moved into the new mapping.
  std::vector<std::pair<std::byte*, std::uint64_t>> unmap;
  {
    std::lock_guard lock(mutex_);
    // Takes the first `taken` bytes of the kept mapping `kept` out of the kept ones, into
    // `pieces`; a tail worth keeping stays kept, a smaller one is unmapped.
    const auto take = [&](std::multimap<std::uint64_t, std::byte*>::iterator kept,
                          std::uint64_t taken) {
      const auto [kept_size, kept_memory] = *kept;
      kept_.erase(kept);
      kept_bytes_ -= kept_size;
      if (kept_size - taken >= mapping_threshold) {
        kept_.emplace(kept_size - taken, kept_memory + taken);
        kept_bytes_ += kept_size - taken;
      } else if (kept_size > taken) {
        unmap.emplace_back(kept_memory + taken, kept_size - taken);
      }
      pieces.emplace_back(kept_memory, taken);
    };
    if (auto fit = kept_.lower_bound(size); fit != kept_.end()) {
      take(fit, size);
    } else {
      for (std::uint64_t covered = 0; covered < size && !kept_.empty();) {
        auto largest = std::prev(kept_.end());
        const std::uint64_t taken = std::min(largest->first, size - covered);
        take(largest, taken);
        covered += taken;
      }
    }
  }
  for (const auto& [mapping, mapping_size] : unmap) ::munmap(mapping, mapping_size);
  if (pieces.size() == 1 && pieces.front().second == size) return pieces.front().first;

  std::byte* memory = nullptr;
  try {
    memory = map_huge_page_memory(size);
  } catch (...) {
    for (const auto& [piece, piece_size] : pieces) ::munmap(piece, piece_size);
    throw;
  }
  std::uint64_t offset = 0;
  std::uint64_t recycled = 0;
  for (const auto& [piece, piece_size] : pieces) {
    void* moved = ::mremap(piece, piece_size, piece_size, MREMAP_MAYMOVE | MREMAP_FIXED,
                           memory + offset);
    // Should the kernel refuse, the piece's place keeps the new mapping's fresh pages.
    if (moved == MAP_FAILED) {
      ::munmap(piece, piece_size);
    } else {
      recycled += piece_size;
    }
    offset += piece_size;
  }
  ::madvise(memory, size, MADV_HUGEPAGE);
  fresh_bytes_.fetch_add(size - recycled, std::memory_order_relaxed);
  return memory;
}

std::shared_ptr<std::byte> TensorMemoryPool::allocate(std::uint64_t bytes,
                                                      std::uint64_t page_offset) {
  std::byte* memory = nullptr;
  if (bytes < mapping_threshold) page_offset = 0;
  const std::uint64_t mapped = bytes >= mapping_threshold ? page_round(page_offset + bytes) : 0;
  try {
    if (bytes == 0) {
      memory = empty_tensor_storage;
    } else if (mapped == 0) {
      const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
      memory = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
      if (memory == nullptr) throw std::bad_alloc();
    } else {
      memory = take_mapping(mapped) + page_offset;
    }
  } catch (...) {
    budget_->release(bytes);
    throw;
  }
  return std::shared_ptr<std::byte>(memory,
                                    Release{shared_from_this(), bytes, mapped, page_offset});
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
    memory -= allocation.page_offset;
    std::unique_lock lock(mutex_);
    // Kept pages are memory nobody uses: at most the limit's worth of them, and a sixty-fourth
    // more for what mappings add to the bytes the budget counts (rounding to pages, and the
    // page offset of memory aligned for direct I/O), without which a stream of tensors that
    // fill the limit between them could never keep the last of them.
    const std::uint64_t limit = budget_->limit();
    const bool fits = kept_bytes_ + allocation.mapped <= limit + limit / 64;
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

std::uint64_t TensorMemoryPool::fresh_bytes() const {
  return fresh_bytes_.load(std::memory_order_relaxed);
}

}  // namespace tensorstream::detail
