#include "storage/http/backoff.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <random>
#include <iterator>
#include <string>
#include <string_view>

#include "storage/http/http_date.hpp"

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

std::optional<std::chrono::milliseconds> retry_after(const boost::beast::http::fields& response,
                                                     std::chrono::system_clock::time_point now) {
  const auto found = response.find(boost::beast::http::field::retry_after);
  if (found == response.end()) return std::nullopt;
  const std::string_view text = found->value();
  std::chrono::milliseconds wait{};
  std::int64_t seconds = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
  if (ec == std::errc{} && end == text.data() + text.size() && seconds >= 0) {
    wait = std::chrono::seconds(std::min<std::int64_t>(seconds, 24 * 3600));
  } else {
    const auto at = parse_http_date(text);
    if (!at) return std::nullopt;
    wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*at - now),
                    std::chrono::milliseconds{0});
  }
  return std::min<std::chrono::milliseconds>(wait, max_retry_after);
}

}  // namespace tensorstream
