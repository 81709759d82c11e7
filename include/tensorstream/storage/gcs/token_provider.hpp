#pragma once
/// @file
/// The interface of every source of Google access tokens.

#include <boost/asio/awaitable.hpp>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/gcs/access_token.hpp"

namespace tensorstream::gcs {

/// A source of access tokens: a service account key, gcloud's user credentials, the GCE metadata
/// server.
///
/// Implementations read their configuration (environment variables, files) on every token(), so
/// that a chain built once follows later changes. token() may be called concurrently.
class TENSORSTREAM_API TokenProvider {
 public:
  virtual ~TokenProvider() = default;

  /// The name used in errors, e.g. "GCE metadata server".
  virtual std::string name() const = 0;

  /// Fetches a token. Throws CredentialsError naming this provider when there is none.
  virtual boost::asio::awaitable<AccessToken> token() = 0;
};

}  // namespace tensorstream::gcs
