#include "storage/http/backoff.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <ctime>
#include <random>
#include <iterator>
#include <string>
#include <string_view>

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

namespace {

// IMF-fixdate, the only date form servers may send: "Sun, 06 Nov 1994 08:49:37 GMT". Read by
// hand: strptime's %a and %b follow the program's locale.
std::optional<std::chrono::system_clock::time_point> imf_fixdate(std::string_view text) {
  static constexpr std::string_view months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  // "Www, DD Mmm YYYY HH:MM:SS GMT": 29 characters, the fields at fixed places.
  if (text.size() != 29 || text.substr(3, 2) != ", " || text.substr(25) != " GMT") {
    return std::nullopt;
  }
  const auto number = [&](std::size_t at, std::size_t digits) -> std::optional<int> {
    int value = 0;
    const char* first = text.data() + at;
    const auto [end, ec] = std::from_chars(first, first + digits, value);
    if (ec != std::errc{} || end != first + digits) return std::nullopt;
    return value;
  };
  const auto month = std::find(std::begin(months), std::end(months), text.substr(8, 3));
  const auto day = number(5, 2);
  const auto year = number(12, 4);
  const auto hour = number(17, 2);
  const auto minute = number(20, 2);
  const auto second = number(23, 2);
  if (month == std::end(months) || !day || !year || !hour || !minute || !second ||
      text[7] != ' ' || text[11] != ' ' || text[16] != ' ' || text[19] != ':' ||
      text[22] != ':') {
    return std::nullopt;
  }
  std::tm date{};
  date.tm_year = *year - 1900;
  date.tm_mon = static_cast<int>(month - std::begin(months));
  date.tm_mday = *day;
  date.tm_hour = *hour;
  date.tm_min = *minute;
  date.tm_sec = *second;
  return std::chrono::system_clock::from_time_t(timegm(&date));
}

}  // namespace

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
    const auto at = imf_fixdate(text);
    if (!at) return std::nullopt;
    wait = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(*at - now),
                    std::chrono::milliseconds{0});
  }
  return std::min<std::chrono::milliseconds>(wait, max_retry_after);
}

}  // namespace tensorstream
