#include "tensorstream/streaming/memory_budget.hpp"

#include <algorithm>

#include "tensorstream/error.hpp"

namespace tensorstream {

MemoryBudget::MemoryBudget(std::uint64_t limit) : limit_(limit) {
  if (limit == 0) throw InvalidArgument("memory_limit must be at least 1 byte");
}

bool MemoryBudget::fits_locked(std::uint64_t bytes) const {
  return used_ == 0 || bytes <= limit_ - std::min(used_, limit_);
}

bool MemoryBudget::try_acquire(std::uint64_t bytes) {
  std::lock_guard lock(mutex_);
  if (!fits_locked(bytes)) return false;
  used_ += bytes;
  peak_ = std::max(peak_, used_);
  return true;
}

bool MemoryBudget::fits(std::uint64_t bytes) const {
  std::lock_guard lock(mutex_);
  return fits_locked(bytes);
}

void MemoryBudget::release(std::uint64_t bytes) {
  {
    std::lock_guard lock(mutex_);
    used_ -= std::min(bytes, used_);
  }
  std::lock_guard lock(listener_mutex_);
  if (listener_) listener_();
}

void MemoryBudget::set_release_listener(std::function<void()> listener) {
  std::lock_guard lock(listener_mutex_);
  listener_ = std::move(listener);
}

std::uint64_t MemoryBudget::used() const {
  std::lock_guard lock(mutex_);
  return used_;
}

std::uint64_t MemoryBudget::peak() const {
  std::lock_guard lock(mutex_);
  return peak_;
}

}  // namespace tensorstream
