#pragma once
/// @file
/// The error a credential provider, or a whole chain of them, reports when it has no credentials.

#include <string>

#include "tensorstream/error.hpp"

namespace tensorstream::s3 {

/// A credential provider could not deliver credentials.
///
/// `configured()` tells a chain what to do next: false when the provider's source is simply absent
/// (no variable set, no profile, no metadata endpoint reachable), so the next provider is tried;
/// true when the source is set up but broken (a partial key pair, an endpoint that refuses), which
/// the AWS SDKs report instead of silently falling back to other credentials.
class CredentialsError : public Error {
 public:
  /// @param provider the provider's name, e.g. "environment", "EC2 instance metadata".
  /// @param cause what went wrong, e.g. "AWS_ACCESS_KEY_ID is not set".
  CredentialsError(std::string provider, std::string cause, bool configured)
      : Error("AWS credentials from " + provider + ": " + cause),
        provider_(std::move(provider)),
        cause_(std::move(cause)),
        configured_(configured) {}

  /// Name of the provider that failed.
  const std::string& provider() const noexcept { return provider_; }
  /// What went wrong, without the provider's name.
  const std::string& cause() const noexcept { return cause_; }
  /// Whether the provider's source was set up (so a chain must not fall back).
  bool configured() const noexcept { return configured_; }

 private:
  std::string provider_;
  std::string cause_;
  bool configured_;
};

}  // namespace tensorstream::s3
