#pragma once
/// @file
/// AWS access keys, as the credential providers find them and the SigV4 signer uses them.

#include <chrono>
#include <optional>
#include <string>

namespace tensorstream::s3 {

/// An AWS access key pair, with the session token of temporary credentials.
struct Credentials {
  std::string access_key_id;      ///< e.g. "AKIAIOSFODNN7EXAMPLE".
  std::string secret_access_key;  ///< The secret half; never logged.
  std::string session_token;      ///< Empty for long-term keys.
  /// When temporary credentials stop working; nullopt for keys that do not expire.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

}  // namespace tensorstream::s3
