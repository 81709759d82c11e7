#include "storage/http/backoff.hpp"

#include <algorithm>
#include <cstdint>
#include <random>

namespace tensorstream {

std::chrono::milliseconds full_jitter(std::chrono::milliseconds cap) {
  thread_local std::minstd_rand random{std::random_device{}()};
  std::uniform_int_distribution<std::int64_t> pick(0, std::max<std::int64_t>(cap.count(), 0));
  return std::chrono::milliseconds(pick(random));
}

std::chrono::milliseconds backoff_cap(const HttpOptions& options, int retry, bool throttled) {
  const auto first = throttled ? options.throttle_base_delay : options.retry_base_delay;
  const std::int64_t base = std::max<std::int64_t>(first.count(), 0);
  const std::int64_t limit = std::max<std::int64_t>(options.retry_max_delay.count(), 0);
  // Doubling stops at the limit, which also keeps the value far from overflowing.
  std::int64_t cap = base;
  for (int i = 1; i < retry && cap < limit; ++i) cap *= 2;
  return std::chrono::milliseconds(std::min(cap, limit));
}

}  // namespace tensorstream
