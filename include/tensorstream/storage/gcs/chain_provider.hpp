#pragma once
/// @file
/// Trying token providers in order.

#include <memory>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// Returns the token of the first provider that has one. A provider whose source is absent
/// (CredentialsError::configured() false) passes to the next; one whose source is set up but
/// broken ends the search with its own error, as in the Google SDKs.
class TENSORSTREAM_API ChainProvider : public TokenProvider {
 public:
  /// Tries `providers` in this order.
  explicit ChainProvider(std::vector<std::shared_ptr<TokenProvider>> providers);

  /// "application default credentials".
  std::string name() const override;

  /// When no provider has a token, throws CredentialsError (not configured) whose cause lists
  /// every provider with its reason.
  boost::asio::awaitable<AccessToken> token() override;

 private:
  std::vector<std::shared_ptr<TokenProvider>> providers_;
};

}  // namespace tensorstream::gcs
