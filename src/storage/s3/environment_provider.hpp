#pragma once
/// @file
/// Credentials from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN.

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Reads the key pair (and optional session token) from the environment.
class EnvironmentProvider : public CredentialsProvider {
 public:
  /// "environment".
  std::string name() const override;
  /// Not configured without AWS_ACCESS_KEY_ID; configured but failing when only one of the
  /// pair is set.
  boost::asio::awaitable<Credentials> get() override;
};

}  // namespace tensorstream::s3
