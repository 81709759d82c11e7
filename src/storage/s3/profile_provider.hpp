#pragma once
/// @file
/// Credentials from the AWS shared credentials and config files.

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Reads aws_access_key_id, aws_secret_access_key and aws_session_token of the profile named by
/// AWS_PROFILE (else "default") from AWS_SHARED_CREDENTIALS_FILE (else ~/.aws/credentials) and
/// AWS_CONFIG_FILE (else ~/.aws/config, sections [profile NAME]); the credentials file wins.
class ProfileProvider : public CredentialsProvider {
 public:
  /// "shared files".
  std::string name() const override;
  /// Not configured when the default profile is absent or has no keys; configured but failing
  /// for a malformed file, a profile AWS_PROFILE names that does not exist, half a key pair, or
  /// a profile that needs an unsupported mechanism (role_arn, credential_process, SSO).
  boost::asio::awaitable<Credentials> get() override;
};

}  // namespace tensorstream::s3
