#include "storage/s3/credentials_document.hpp"

#include <simdjson.h>

#include "storage/s3/iso8601.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

Credentials parse_credentials_document(std::string_view json, const std::string& url,
                                       const std::string& provider, bool configured) {
  const auto fail = [&](const std::string& what) {
    throw CredentialsError("AWS", provider,
                           "malformed credentials from " + url + ": " + what, configured);
  };
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(json);
  simdjson::dom::object document;
  if (const auto error = parser.parse(padded).get(document)) {
    fail(simdjson::error_message(error));
  }
  const auto text = [&](const char* key, bool required) {
    std::string_view value;
    const auto error = document[key].get(value);
    if (error == simdjson::NO_SUCH_FIELD && !required) return std::string();
    if (error) fail(std::string(key) + ": " + simdjson::error_message(error));
    return std::string(value);
  };

  const std::string code = text("Code", false);
  if (!code.empty() && code != "Success") {
    throw CredentialsError("AWS",
        provider, url + " answered Code \"" + code + "\": " + text("Message", false), configured);
  }
  Credentials credentials;
  credentials.access_key_id = text("AccessKeyId", true);
  credentials.secret_access_key = text("SecretAccessKey", true);
  credentials.session_token = text("Token", false);
  const std::string expiration = text("Expiration", false);
  if (!expiration.empty()) {
    credentials.expiration = parse_iso8601(expiration);
    if (!credentials.expiration) fail("Expiration \"" + expiration + "\" is not ISO 8601 UTC");
  }
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    fail("empty AccessKeyId or SecretAccessKey");
  }
  return credentials;
}

}  // namespace tensorstream::s3
