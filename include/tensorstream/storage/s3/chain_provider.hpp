#pragma once
/// @file
/// Trying credential providers in order.

#include <memory>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Returns the credentials of the first provider that has some. A provider whose source is
/// absent (CredentialsError::configured() false) passes to the next; one whose source is set up
/// but broken ends the search with its own error, as in the AWS SDKs.
class TENSORSTREAM_API ChainProvider : public CredentialsProvider {
 public:
  /// Tries `providers` in this order.
  explicit ChainProvider(std::vector<std::shared_ptr<CredentialsProvider>> providers);

  /// "credential chain".
  std::string name() const override;

  /// When no provider has credentials, throws CredentialsError (not configured) whose cause
  /// lists every provider with its reason, e.g. "environment: AWS_ACCESS_KEY_ID is not set;
  /// shared files: ...".
  boost::asio::awaitable<Credentials> credentials() override;

 private:
  std::vector<std::shared_ptr<CredentialsProvider>> providers_;
};

}  // namespace tensorstream::s3
