#pragma once
/// @file
/// The interface of every source of AWS credentials.

#include <boost/asio/awaitable.hpp>
#include <string>

#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// A source of AWS credentials: the environment, the shared files, an HTTP endpoint.
///
/// Implementations read their configuration (environment variables, files) on every load(), so
/// that a chain built once follows later changes. load() may be called concurrently.
class CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;

  /// The name used in errors, e.g. "environment".
  virtual std::string name() const = 0;

  /// Fetches credentials. Throws CredentialsError naming this provider when there are none.
  virtual boost::asio::awaitable<Credentials> load() = 0;
};

}  // namespace tensorstream::s3
