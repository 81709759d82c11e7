#include "storage/s3/sts_response.hpp"

#include <simdjson.h>

#include <cmath>

#include "storage/s3/iso8601.hpp"
#include "tensorstream/storage/s3/credentials_error.hpp"

namespace tensorstream::s3 {

Credentials parse_web_identity_response(std::string_view json, const std::string& url,
                                        const std::string& provider) {
  const auto fail = [&](const std::string& what) {
    throw CredentialsError(
        provider, "malformed AssumeRoleWithWebIdentity response from " + url + ": " + what, true);
  };
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::dom::object fields;
  if (const auto error = parser.parse(padded)
                             .at_pointer("/AssumeRoleWithWebIdentityResponse/"
                                         "AssumeRoleWithWebIdentityResult/Credentials")
                             .get(fields)) {
    fail(std::string("Credentials: ") + simdjson::error_message(error));
  }
  const auto text = [&](const char* key) {
    std::string_view value;
    if (const auto error = fields[key].get(value)) {
      fail(std::string(key) + ": " + simdjson::error_message(error));
    }
    if (value.empty()) fail(std::string(key) + " is empty");
    return std::string(value);
  };

  Credentials credentials{text("AccessKeyId"), text("SecretAccessKey"), text("SessionToken"),
                          std::nullopt};
  const auto expiration = fields["Expiration"];
  double seconds = 0;
  std::string_view iso;
  if (expiration.get(seconds) == simdjson::SUCCESS && std::isfinite(seconds) && seconds > 0) {
    credentials.expiration = std::chrono::system_clock::time_point(
        std::chrono::seconds(static_cast<std::int64_t>(seconds)));
  } else if (expiration.get(iso) == simdjson::SUCCESS) {
    credentials.expiration = parse_iso8601(iso);
  }
  if (!credentials.expiration) fail("Expiration is neither epoch seconds nor ISO 8601 UTC");
  return credentials;
}

std::string sts_error(std::string_view json) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  std::string_view code;
  if (parser.parse(padded).at_pointer("/Error/Code").get(code) != simdjson::SUCCESS) return {};
  std::string_view message;
  std::string text(code);
  if (parser.parse(padded).at_pointer("/Error/Message").get(message) == simdjson::SUCCESS) {
    text += ": ";
    text += message;
  }
  return text;
}

}  // namespace tensorstream::s3
