#include "storage/gcs/token_response.hpp"

#include <simdjson.h>

#include <cstdint>
#include <string>

#include "storage/oauth_token.hpp"

namespace tensorstream::gcs {
namespace {

// Google's tokens live an hour; a year is far beyond any real lifetime.
constexpr std::int64_t max_expires_in = 365LL * 24 * 3600;

}  // namespace

AccessToken parse_token(std::string_view json, std::chrono::system_clock::time_point now,
                        const std::string& url, const std::string& provider, bool configured) {
  const auto fail = [&](const std::string& what) {
    return TokenRequester{"Google", provider, configured}.malformed(url, what);
  };
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
  AccessToken token{std::string(value), std::nullopt};
  std::int64_t expires_in = 0;
  const auto error = document["expires_in"].get(expires_in);
  if (error == simdjson::NO_SUCH_FIELD) return token;
  if (error) throw fail(std::string("expires_in: ") + simdjson::error_message(error));
  // Bounded before the arithmetic, which would overflow for values near the integer's limits.
  if (expires_in < 0 || expires_in > max_expires_in) {
    throw fail("expires_in " + std::to_string(expires_in) + " is outside [0, " +
               std::to_string(max_expires_in) + "] seconds");
  }
  token.expiration = now + std::chrono::seconds(expires_in);
  return token;
}

}  // namespace tensorstream::gcs
