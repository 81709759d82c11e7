#pragma once
/// @file
/// OAuth 2.0 access tokens, as the token providers get them and requests to GCS carry them.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::gcs {

/// Google's OAuth 2.0 token endpoint, where service accounts and gcloud's user credentials get
/// their access tokens.
inline constexpr std::string_view google_token_uri = "https://oauth2.googleapis.com/token";

/// A bearer token for the Cloud Storage JSON API.
struct AccessToken {
  std::string value;  ///< Sent as "Authorization: Bearer VALUE"; never logged.
  /// When the token stops working; nullopt for a token without a known lifetime.
  std::optional<std::chrono::system_clock::time_point> expiration;
};

}  // namespace tensorstream::gcs
