#include "storage/azure/key_providers.hpp"

#include <utility>

#include "storage/azure/connection_string.hpp"
#include "storage/environment.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::azure {

std::string ConnectionStringProvider::name() const { return "AZURE_STORAGE_CONNECTION_STRING"; }

boost::asio::awaitable<Credentials> ConnectionStringProvider::get() {
  const std::string text = environment("AZURE_STORAGE_CONNECTION_STRING");
  if (text.empty()) throw CredentialsError("Azure", name(), "not set", false);
  ConnectionString parsed;
  try {
    parsed = parse_connection_string(text, name());
  } catch (const InvalidArgument& error) {
    throw CredentialsError("Azure", name(), error.what(), true);
  }
  if (!parsed.account_key.empty()) {
    co_return Credentials{Credentials::Kind::shared_key, parsed.account_key, parsed.account};
  }
  if (!parsed.sas.empty()) co_return Credentials{Credentials::Kind::sas, parsed.sas};
  throw CredentialsError("Azure", name(), "names neither AccountKey nor SharedAccessSignature",
                         false);
}

std::string AccountKeyProvider::name() const { return "AZURE_STORAGE_KEY"; }

boost::asio::awaitable<Credentials> AccountKeyProvider::get() {
  std::string key = environment("AZURE_STORAGE_KEY");
  if (key.empty()) throw CredentialsError("Azure", name(), "not set", false);
  co_return Credentials{Credentials::Kind::shared_key, std::move(key)};
}

std::string SasTokenProvider::name() const { return "AZURE_STORAGE_SAS_TOKEN"; }

boost::asio::awaitable<Credentials> SasTokenProvider::get() {
  std::string token = environment("AZURE_STORAGE_SAS_TOKEN");
  if (token.starts_with('?')) token.erase(0, 1);
  if (token.empty()) throw CredentialsError("Azure", name(), "not set", false);
  co_return Credentials{Credentials::Kind::sas, std::move(token)};
}

FixedProvider::FixedProvider(Credentials credentials, std::string name)
    : credentials_(std::move(credentials)), name_(std::move(name)) {}

std::string FixedProvider::name() const { return name_; }

boost::asio::awaitable<Credentials> FixedProvider::get() { co_return credentials_; }

}  // namespace tensorstream::azure
