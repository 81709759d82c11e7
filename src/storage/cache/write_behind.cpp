#include "storage/cache/write_behind.hpp"

#include <algorithm>
#include <bit>
#include <new>

namespace tensorstream::detail {

std::optional<WriteBehind::Buffer> WriteBehind::take(std::size_t size) {
  std::lock_guard lock(mutex_);
  const auto fits = std::find_if(free_.begin(), free_.end(),
                                 [&](const Buffer& buffer) { return buffer.size() >= size; });
  if (fits != free_.end()) {
    Buffer buffer = std::move(*fits);
    free_.erase(fits);
    ++out_;
    return buffer;
  }
  // Whole powers of two, so that the ranges of one stream, which differ a little in size,
  // reuse each other's buffers.
  const std::size_t capacity = std::bit_ceil(std::max(size, std::size_t{1} << 20));
  // Smaller free buffers make room for a larger one.
  while (held_ + capacity > limit_ && !free_.empty()) {
    held_ -= free_.back().size();
    free_.pop_back();
  }
  if (held_ + capacity > limit_) return std::nullopt;
  try {
    Buffer buffer(capacity);
    held_ += capacity;
    ++out_;
    return buffer;
  } catch (const std::bad_alloc&) {
    return std::nullopt;  // the read writes its bytes itself
  }
}

void WriteBehind::give_back(Buffer buffer) {
  {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(buffer));
    --out_;
  }
  all_back_.notify_all();
}

void WriteBehind::wait_until_written(std::chrono::seconds patience) {
  hurry();
  std::unique_lock lock(mutex_);
  all_back_.wait_for(lock, patience, [&] { return out_ == 0; });
}

}  // namespace tensorstream::detail
