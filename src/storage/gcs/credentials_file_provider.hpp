#pragma once
/// @file
/// Access tokens for the credentials in a JSON file, as gcloud and the Cloud Console write them.

#include <chrono>
#include <filesystem>
#include <string>

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// Reads a credentials file on every get() and gets a token as its "type" says: a service
/// account key ("service_account", see ServiceAccountProvider) or gcloud's user credentials
/// ("authorized_user", see AuthorizedUserProvider). Other types (external accounts, impersonation)
/// are reported as unsupported.
class CredentialsFileProvider : public TokenProvider {
 public:
  /// `name` is how errors name the source, e.g. "GOOGLE_APPLICATION_CREDENTIALS"; `timeout`
  /// bounds the token request.
  explicit CredentialsFileProvider(std::filesystem::path path,
                                   std::string name = "credentials file",
                                   std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// The name given to the constructor.
  std::string name() const override;

  /// Every failure is reported (configured), naming the file: unreadable, not JSON, a missing
  /// field, an unsupported type, and the token request's failure.
  boost::asio::awaitable<AccessToken> get() override;

 private:
  std::filesystem::path path_;
  std::string name_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::gcs
