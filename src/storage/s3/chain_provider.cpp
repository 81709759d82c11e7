#include "tensorstream/storage/s3/chain_provider.hpp"

#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream::s3 {

ChainProvider::ChainProvider(std::vector<std::shared_ptr<CredentialsProvider>> providers)
    : providers_(std::move(providers)) {}

std::string ChainProvider::name() const { return "credential chain"; }

boost::asio::awaitable<Credentials> ChainProvider::credentials() {
  std::string reasons;
  for (const auto& provider : providers_) {
    try {
      Credentials found = co_await provider->credentials();
      log(LogLevel::debug, [&] { return "AWS credentials from " + provider->name(); });
      co_return found;
    } catch (const CredentialsError& error) {
      if (error.configured()) throw;
      if (!reasons.empty()) reasons += "; ";
      reasons += error.provider() + ": " + error.cause();
    }
  }
  throw CredentialsError("AWS", name(), "no provider has credentials (" + reasons + ")", false);
}

}  // namespace tensorstream::s3
