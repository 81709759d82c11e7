#include "storage/s3/iso8601.hpp"

#include <cctype>

namespace tensorstream::s3 {
namespace {

// Reads `digits` decimal digits at `text[at]`; -1 when they are not all digits.
int number(std::string_view text, std::size_t at, std::size_t digits) {
  if (at + digits > text.size()) return -1;
  int value = 0;
  for (std::size_t i = at; i < at + digits; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(text[i]))) return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text) {
  using namespace std::chrono;
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const int y = number(text, 0, 4), mo = number(text, 5, 2), d = number(text, 8, 2);
  const int h = number(text, 11, 2), mi = number(text, 14, 2), s = number(text, 17, 2);
  if (y < 0 || mo < 0 || d < 0 || h < 0 || h > 23 || mi < 0 || mi > 59 || s < 0 || s > 60) {
    return std::nullopt;
  }
  const year_month_day date{year{y}, month{static_cast<unsigned>(mo)},
                            day{static_cast<unsigned>(d)}};
  if (!date.ok()) return std::nullopt;

  std::string_view rest = text.substr(19);
  if (rest.front() == '.') {
    std::size_t end = 1;
    while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
    if (end == 1) return std::nullopt;
    rest.remove_prefix(end);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  return sys_days{date} + hours{h} + minutes{mi} + seconds{s};
}

}  // namespace tensorstream::s3
