#pragma once
/// @file
/// Access tokens of a service account, from a JWT signed with its private key.

#include <chrono>
#include <string>

#include "tensorstream/storage/gcs/access_token.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// The fields of a service account key file (`"type": "service_account"`) that get a token.
struct ServiceAccountKey {
  std::string client_email;    ///< The account, e.g. "loader@project.iam.gserviceaccount.com".
  std::string private_key;     ///< PEM RSA private key; never logged.
  std::string private_key_id;  ///< Sent as the JWT's "kid" when not empty.
  std::string token_uri{google_token_uri};  ///< Where the signed JWT is exchanged.
};

/// Signs a JWT (RS256; issuer the account, scope devstorage.read_write, audience the token URI,
/// valid for one hour) with the key and exchanges it at the key's token URI (OAuth 2.0 JWT
/// bearer grant) for an access token.
class ServiceAccountProvider : public TokenProvider {
 public:
  /// `timeout` bounds the token request.
  explicit ServiceAccountProvider(ServiceAccountKey key,
                                  std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "service account EMAIL".
  std::string name() const override;

  /// Every failure is reported (configured): a key OpenSSL cannot read or that is not RSA, an
  /// unreachable token URI, and the endpoint's OAuth error, e.g. "invalid_grant: Invalid JWT
  /// Signature.".
  boost::asio::awaitable<AccessToken> get() override;

 private:
  ServiceAccountKey key_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::gcs
