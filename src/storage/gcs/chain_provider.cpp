#include "tensorstream/storage/gcs/chain_provider.hpp"

#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream::gcs {

ChainProvider::ChainProvider(std::vector<std::shared_ptr<TokenProvider>> providers)
    : providers_(std::move(providers)) {}

std::string ChainProvider::name() const { return "application default credentials"; }

boost::asio::awaitable<AccessToken> ChainProvider::token() {
  std::vector<std::string> absent;
  for (const auto& provider : providers_) {
    try {
      AccessToken token = co_await provider->token();
      log(LogLevel::debug, [&] { return "Google credentials from " + provider->name(); });
      co_return token;
    } catch (const CredentialsError& error) {
      if (error.configured()) throw;
      absent.push_back(error.provider() + ": " + error.cause());
    }
  }
  std::string reasons;
  for (const auto& reason : absent) reasons += (reasons.empty() ? "" : "; ") + reason;
  throw CredentialsError("Google", name(), "no source has credentials (" + reasons + ")", false);
}

}  // namespace tensorstream::gcs
