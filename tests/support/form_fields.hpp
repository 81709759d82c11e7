#pragma once
// Reading what HTTP clients send the test servers: percent-encoded query strings and form bodies.

#include <map>
#include <string>
#include <string_view>
#include <utility>

namespace tensorstream::testing {

/// Decodes %XY escapes (and '+' as a space in forms, `plus_is_space`); a malformed escape stays
/// as it is.
std::string percent_decode(std::string_view text, bool plus_is_space);

/// The decoded name=value pairs of a query string or form body (application/x-www-form-urlencoded
/// with `plus_is_space`).
std::map<std::string, std::string> parse_pairs(std::string_view text, bool plus_is_space);

/// The path and the query (after the '?'; empty without one) of a request target.
std::pair<std::string_view, std::string_view> split_target(std::string_view target);

}  // namespace tensorstream::testing
