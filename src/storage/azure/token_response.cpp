#include "storage/azure/token_response.hpp"

#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <optional>

namespace tensorstream::azure {
namespace {

// Entra ID's tokens live an hour or a day; a year is far beyond any real lifetime.
constexpr std::int64_t max_lifetime = 365LL * 24 * 3600;

// The integer field `name` of `document`, a JSON number or a decimal string; nullopt when the
// field is absent or is neither (`malformed` then tells which).
std::optional<std::int64_t> seconds_field(simdjson::dom::object document, const char* name,
                                          bool& malformed) {
  const auto element = document[name];
  malformed = false;
  if (element.error() == simdjson::NO_SUCH_FIELD) return std::nullopt;
  std::int64_t value = 0;
  if (!element.get(value)) return value;
  std::string_view text;
  if (!element.get(text)) {
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (!text.empty() && ec == std::errc{} && end == text.data() + text.size()) return value;
  }
  malformed = true;
  return std::nullopt;
}

}  // namespace

Credentials parse_token(std::string_view json, std::chrono::system_clock::time_point now,
                        const std::string& url, const TokenRequester& who) {
  const auto fail = [&](const std::string& what) { return who.malformed(url, what); };
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::dom::object document;
  if (const auto error = parser.parse(padded).get(document)) {
    throw fail(simdjson::error_message(error));
  }
  std::string_view value;
  if (const auto error = document["access_token"].get(value)) {
    throw fail(std::string("access_token: ") + simdjson::error_message(error));
  }
  if (value.empty()) throw fail("access_token is empty");
  Credentials credentials{Credentials::Kind::bearer, std::string(value), {}, std::nullopt};
  bool malformed = false;
  const auto seconds = [&](const char* name) {
    auto found = seconds_field(document, name, malformed);
    if (malformed) throw fail(std::string(name) + " is not a whole number of seconds");
    return found;
  };
  const std::optional<std::int64_t> expires_in = seconds("expires_in");
  const std::optional<std::int64_t> expires_on = expires_in ? std::nullopt : seconds("expires_on");
  // Bounded before the arithmetic, which would overflow for values near the integer's limits.
  if (expires_in) {
    if (*expires_in < 0 || *expires_in > max_lifetime) {
      throw fail("expires_in " + std::to_string(*expires_in) + " is outside [0, " +
                 std::to_string(max_lifetime) + "] seconds");
    }
    credentials.expiration = now + std::chrono::seconds(*expires_in);
  } else if (expires_on) {
    // Within a year of now, or the conversion to the clock's nanoseconds could overflow.
    const std::int64_t now_seconds =
        std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
    if (*expires_on < now_seconds - max_lifetime || *expires_on > now_seconds + max_lifetime) {
      throw fail("expires_on " + std::to_string(*expires_on) +
                 " is not a time within a year of now in epoch seconds");
    }
    credentials.expiration =
        std::chrono::system_clock::time_point(std::chrono::seconds(*expires_on));
  } else {
    throw fail("neither expires_in nor expires_on says when the token expires");
  }
  return credentials;
}

}  // namespace tensorstream::azure
