#pragma once
// Durations and times as the CLI's flags take them and its output prints them.

#include <chrono>
#include <string>
#include <string_view>

namespace tensorstream::cli {

/// "0", "90s", "30m", "12h", "7d"; a bare number counts seconds. Throws InvalidArgument naming
/// --older-than.
std::chrono::seconds parse_duration(std::string_view text);

/// "2026-12-01T10:00:00Z"
std::string utc_text(std::chrono::system_clock::time_point time);

}  // namespace tensorstream::cli
