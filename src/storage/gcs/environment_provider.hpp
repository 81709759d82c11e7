#pragma once
/// @file
/// Access tokens for the credentials file GOOGLE_APPLICATION_CREDENTIALS names.

#include <chrono>
#include <string>

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// A CredentialsFileProvider for the file in GOOGLE_APPLICATION_CREDENTIALS, read anew on every
/// get().
class EnvironmentProvider : public TokenProvider {
 public:
  /// `timeout` bounds the token request.
  explicit EnvironmentProvider(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "GOOGLE_APPLICATION_CREDENTIALS".
  std::string name() const override;

  /// Not configured when the variable is unset or empty; once it is set, every failure is
  /// reported, as the Google SDKs do.
  boost::asio::awaitable<AccessToken> get() override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::gcs
