#pragma once
/// @file
/// The error an AWS credential provider, or a whole chain of them, reports when it has no
/// credentials.

#include <string>

#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

/// An AWS credential provider could not deliver credentials: "AWS credentials from PROVIDER:
/// CAUSE". See tensorstream::CredentialsError for what configured() tells a chain.
class CredentialsError : public tensorstream::CredentialsError {
 public:
  /// @param provider the provider's name, e.g. "environment", "EC2 instance metadata".
  /// @param cause what went wrong, e.g. "AWS_ACCESS_KEY_ID is not set".
  CredentialsError(std::string provider, std::string cause, bool configured)
      : tensorstream::CredentialsError("AWS", std::move(provider), std::move(cause), configured) {}
};

}  // namespace tensorstream::s3
