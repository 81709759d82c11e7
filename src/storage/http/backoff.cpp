#include "storage/http/backoff.hpp"

#include <algorithm>
#include <cstdint>
#include <random>

namespace tensorstream {

std::chrono::milliseconds backoff_delay(const HttpOptions& options, int retry) {
  thread_local std::minstd_rand random{std::random_device{}()};
  const std::int64_t base = std::max<std::int64_t>(options.retry_base_delay.count(), 0);
  const std::int64_t limit = std::max<std::int64_t>(options.retry_max_delay.count(), 0);
  // Doubling stops at the limit, which also keeps the shift far from overflowing.
  std::int64_t cap = base;
  for (int i = 1; i < retry && cap < limit; ++i) cap *= 2;
  cap = std::min(cap, limit);
  std::uniform_int_distribution<std::int64_t> pick(0, cap);
  return std::chrono::milliseconds(pick(random));
}

}  // namespace tensorstream
