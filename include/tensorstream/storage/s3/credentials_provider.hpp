#pragma once
/// @file
/// The interface of every source of AWS credentials.

#include <boost/asio/awaitable.hpp>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// A source of AWS credentials: the environment, the shared files, an HTTP endpoint.
///
/// Implementations read their configuration (environment variables, files) on every call of
/// credentials(), so that a chain built once follows later changes; it may be called
/// concurrently. Providers' coroutines are named after what they return, here and in
/// gcs::TokenProvider::token().
class TENSORSTREAM_API CredentialsProvider {
 public:
  virtual ~CredentialsProvider() = default;

  /// The name used in errors, e.g. "environment".
  virtual std::string name() const = 0;

  /// Fetches credentials. Throws CredentialsError naming this provider when there are none.
  virtual boost::asio::awaitable<Credentials> credentials() = 0;
};

}  // namespace tensorstream::s3
