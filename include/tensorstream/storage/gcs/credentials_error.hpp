#pragma once
/// @file
/// The error a Google token provider, or a whole chain of them, reports when it has no token.

#include <string>
#include <utility>

#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::gcs {

/// A Google token provider could not deliver an access token; the message starts with
/// "Google credentials from PROVIDER: ".
class CredentialsError : public tensorstream::CredentialsError {
 public:
  /// @param provider the provider's name, e.g. "GCE metadata server".
  /// @param cause what went wrong.
  /// @param configured whether the provider's source was set up (see the base class).
  CredentialsError(std::string provider, std::string cause, bool configured)
      : tensorstream::CredentialsError("Google", std::move(provider), std::move(cause),
                                       configured) {}
};

}  // namespace tensorstream::gcs
