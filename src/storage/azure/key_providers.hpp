#pragma once
// The sources of Azure credentials that need no request: the connection string, the account
// key and the SAS token of the environment, and credentials the program gives.

#include <string>

#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// AZURE_STORAGE_CONNECTION_STRING's AccountKey (signing for its AccountName) or
/// SharedAccessSignature. Not configured when the variable is unset or names neither; a
/// malformed string is a configured error.
class ConnectionStringProvider final : public CredentialsProvider {
 public:
  /// "AZURE_STORAGE_CONNECTION_STRING".
  std::string name() const override;
  boost::asio::awaitable<Credentials> get() override;
};

/// AZURE_STORAGE_KEY, signing for the store's account. Not configured when unset.
class AccountKeyProvider final : public CredentialsProvider {
 public:
  /// "AZURE_STORAGE_KEY".
  std::string name() const override;
  boost::asio::awaitable<Credentials> get() override;
};

/// AZURE_STORAGE_SAS_TOKEN (a leading '?' is dropped). Not configured when unset.
class SasTokenProvider final : public CredentialsProvider {
 public:
  /// "AZURE_STORAGE_SAS_TOKEN".
  std::string name() const override;
  boost::asio::awaitable<Credentials> get() override;
};

/// The same credentials on every call.
class FixedProvider final : public CredentialsProvider {
 public:
  /// Gives `credentials`, reported as coming from `name`.
  FixedProvider(Credentials credentials, std::string name);
  std::string name() const override;
  boost::asio::awaitable<Credentials> get() override;

 private:
  Credentials credentials_;
  std::string name_;
};

}  // namespace tensorstream::azure
