#pragma once
/// @file
/// Access tokens for gcloud's application default credentials file.

#include <chrono>
#include <filesystem>
#include <string>

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// A CredentialsFileProvider for the file `gcloud auth application-default login` writes:
/// `$CLOUDSDK_CONFIG/application_default_credentials.json`, where CLOUDSDK_CONFIG defaults to
/// `$HOME/.config/gcloud`.
class GcloudProvider : public TokenProvider {
 public:
  /// `timeout` bounds the token request.
  explicit GcloudProvider(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "gcloud application default credentials".
  std::string name() const override;

  /// Not configured when the file does not exist; once it does, every failure is reported.
  boost::asio::awaitable<AccessToken> get() override;

  /// Where the file is looked for now; empty when neither CLOUDSDK_CONFIG nor HOME is set.
  static std::filesystem::path path();

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::gcs
