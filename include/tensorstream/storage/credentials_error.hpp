#pragma once
/// @file
/// The base of the errors credential providers report when they have no credentials.

#include <string>
#include <utility>

#include "tensorstream/error.hpp"
#include "tensorstream/export.hpp"

namespace tensorstream {

/// A credential provider of a storage service could not deliver credentials: "SERVICE credentials
/// from PROVIDER: CAUSE", e.g. "AWS credentials from environment: AWS_ACCESS_KEY_ID is not set".
/// The one type for every service, s3 and gcs providers alike; service() tells them apart.
///
/// `configured()` tells a chain of providers what to do next: false when the provider's source
/// is simply absent (no variable set, no file, no metadata server reachable), so the next
/// provider is tried; true when the source is set up but broken (an unreadable key file, an
/// endpoint that refuses), which the cloud SDKs report instead of silently falling back to other
/// credentials.
class TENSORSTREAM_API CredentialsError : public Error {
 public:
  /// @param service whose credentials, e.g. "Google".
  /// @param provider the provider's name, e.g. "GOOGLE_APPLICATION_CREDENTIALS".
  /// @param cause what went wrong, e.g. "GOOGLE_APPLICATION_CREDENTIALS is not set".
  CredentialsError(const std::string& service, std::string provider, std::string cause,
                   bool configured)
      : Error(service + " credentials from " + provider + ": " + cause, ErrorKind::credentials),
        service_(service),
        provider_(std::move(provider)),
        cause_(std::move(cause)),
        configured_(configured) {}

  /// The service whose credentials were wanted: "AWS" or "Google".
  const std::string& service() const noexcept { return service_; }

  /// Name of the provider that failed.
  const std::string& provider() const noexcept { return provider_; }
  /// What went wrong, without the provider's name.
  const std::string& cause() const noexcept { return cause_; }
  /// Whether the provider's source was set up (so a chain must not fall back).
  bool configured() const noexcept { return configured_; }

 private:
  std::string service_;
  std::string provider_;
  std::string cause_;
  bool configured_;
};

}  // namespace tensorstream
