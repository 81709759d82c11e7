#include "storage/gcs/service_account_provider.hpp"

#include "storage/gcs/jwt.hpp"
#include "storage/gcs/token_endpoint.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::gcs {

ServiceAccountProvider::ServiceAccountProvider(ServiceAccountKey key,
                                               std::chrono::milliseconds timeout)
    : key_(std::move(key)), timeout_(timeout) {}

std::string ServiceAccountProvider::name() const { return "service account " + key_.client_email; }

boost::asio::awaitable<AccessToken> ServiceAccountProvider::get() {
  std::string assertion;
  try {
    assertion = service_account_assertion(key_, read_write_scope, std::chrono::system_clock::now());
  } catch (const InvalidArgument& error) {
    throw CredentialsError("Google", name(), error.what(), true);
  }
  std::string form = form_encode(
      {{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"}, {"assertion", assertion}});
  co_return co_await post_token_request(key_.token_uri, std::move(form), timeout_, name());
}

}  // namespace tensorstream::gcs
