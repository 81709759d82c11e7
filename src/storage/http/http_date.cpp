#include "storage/http/http_date.hpp"

#include <algorithm>
#include <charconv>
#include <ctime>
#include <iterator>

namespace tensorstream {

// Read by hand: strptime's %a and %b follow the program's locale.
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text) {
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

}  // namespace tensorstream
