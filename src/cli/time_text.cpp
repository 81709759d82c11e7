#include "cli/time_text.hpp"

#include <charconv>
#include <cstdint>
#include <ctime>

#include "tensorstream/error.hpp"

namespace tensorstream::cli {

std::chrono::seconds parse_duration(std::string_view text) {
  const auto fail = [&] {
    return InvalidArgument("--older-than: '" + std::string(text) +
                           "' is not a duration such as 90s, 30m, 12h or 7d");
  };
  std::uint64_t count = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (error != std::errc{} || end == text.data()) throw fail();
  const std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  std::uint64_t seconds_per_unit = 0;
  if (unit.empty() || unit == "s") {
    seconds_per_unit = 1;
  } else if (unit == "m") {
    seconds_per_unit = 60;
  } else if (unit == "h") {
    seconds_per_unit = 3600;
  } else if (unit == "d") {
    seconds_per_unit = 86400;
  } else {
    throw fail();
  }
  // Beyond a thousand years the clock's arithmetic would overflow.
  constexpr std::uint64_t max_seconds = std::uint64_t{1000} * 366 * 86400;
  if (count > max_seconds / seconds_per_unit) throw fail();
  return std::chrono::seconds(count * seconds_per_unit);
}

std::string utc_text(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(
      std::chrono::floor<std::chrono::seconds>(time));
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

}  // namespace tensorstream::cli
