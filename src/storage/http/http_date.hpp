#pragma once
// HTTP dates (Date, Last-Modified, Retry-After).

#include <chrono>
#include <optional>
#include <string_view>

namespace tensorstream {

/// The time an IMF-fixdate names, the only date form servers may send: "Sun, 06 Nov 1994
/// 08:49:37 GMT"; nullopt for any other text.
std::optional<std::chrono::system_clock::time_point> parse_http_date(std::string_view text);

}  // namespace tensorstream
