#pragma once
// The timestamps AWS endpoints write, e.g. "2026-11-29T14:00:00Z".

#include <chrono>
#include <optional>
#include <string_view>

namespace tensorstream::s3 {

/// Parses a UTC ISO 8601 timestamp "YYYY-MM-DDTHH:MM:SS", with optional fractional seconds
/// (dropped), ending in "Z" or "+00:00". nullopt for anything else.
std::optional<std::chrono::system_clock::time_point> parse_iso8601(std::string_view text);

}  // namespace tensorstream::s3
