#include "storage/gcs/jwt.hpp"

#include <cstdint>

#include "base/json_string.hpp"

namespace tensorstream::gcs {

std::string service_account_assertion(const ServiceAccountKey& key, std::string_view scope,
                                      std::chrono::system_clock::time_point now) {
  std::string header = R"({"alg":"RS256","typ":"JWT")";
  if (!key.private_key_id.empty()) header += ",\"kid\":" + json_string(key.private_key_id);
  header += '}';
  const std::int64_t issued = numeric_date(now);
  const std::string claims = "{\"iss\":" + json_string(key.client_email) +
                             ",\"scope\":" + json_string(scope) +
                             ",\"aud\":" + json_string(key.token_uri) +
                             ",\"iat\":" + std::to_string(issued) + ",\"exp\":" +
                             std::to_string(issued + assertion_lifetime.count()) + "}";
  return signed_jwt(header, claims, key.private_key);
}

}  // namespace tensorstream::gcs
