#pragma once
/// @file
/// Access tokens of a user who logged in with `gcloud auth application-default login`.

#include <chrono>
#include <string>

#include "tensorstream/storage/gcs/access_token.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// The fields of an `"type": "authorized_user"` credentials file.
struct AuthorizedUser {
  std::string client_id;      ///< The OAuth client gcloud logged in with.
  std::string client_secret;  ///< Its secret; never logged.
  std::string refresh_token;  ///< The user's refresh token; never logged.
  std::string token_uri{google_token_uri};  ///< Where the refresh token is exchanged.
};

/// Exchanges the refresh token for an access token (OAuth 2.0 refresh_token grant).
class AuthorizedUserProvider : public TokenProvider {
 public:
  /// `timeout` bounds the token request.
  explicit AuthorizedUserProvider(AuthorizedUser user,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "authorized user".
  std::string name() const override;

  /// Every failure is reported (configured), with the endpoint's OAuth error, e.g.
  /// "invalid_grant: Token has been expired or revoked.".
  boost::asio::awaitable<AccessToken> get() override;

 private:
  AuthorizedUser user_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::gcs
