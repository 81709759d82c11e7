#include "storage/azure/workload_identity_provider.hpp"

#include "storage/azure/client_certificate.hpp"
#include "storage/azure/credential_file.hpp"
#include "storage/azure/token_endpoint.hpp"
#include "storage/environment.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::azure {
namespace {

constexpr std::string_view federated_token_blanks = " \t\r\n";

std::string trim_federated_token(const std::string& text) {
  const auto first = text.find_first_not_of(federated_token_blanks);
  if (first == std::string::npos) return {};
  return text.substr(first, text.find_last_not_of(federated_token_blanks) - first + 1);
}

}  // namespace

WorkloadIdentityProvider::WorkloadIdentityProvider(std::chrono::milliseconds timeout)
    : timeout_(timeout) {}

std::string WorkloadIdentityProvider::name() const { return "workload identity"; }

boost::asio::awaitable<Credentials> WorkloadIdentityProvider::get() {
  const std::string token_file = environment("AZURE_FEDERATED_TOKEN_FILE");
  const std::string tenant = environment("AZURE_TENANT_ID");
  const std::string client_id = environment("AZURE_CLIENT_ID");
  const TokenRequester absent{std::string(credentials_service), name(), false};
  if (token_file.empty()) throw absent.error("AZURE_FEDERATED_TOKEN_FILE is not set");
  if (tenant.empty()) throw absent.error("AZURE_TENANT_ID is not set");
  if (client_id.empty()) throw absent.error("AZURE_CLIENT_ID is not set");
  const TokenRequester broken{std::string(credentials_service), name(), true};
  std::string assertion;
  try {
    assertion = trim_federated_token(read_credential_file(token_file));
  } catch (const InvalidArgument& error) {
    throw broken.error(error.what());
  }
  if (assertion.empty()) throw broken.error(token_file + " is empty");
  std::string form = client_credentials_form(
      client_id,
      {{"client_assertion_type", jwt_bearer_assertion}, {"client_assertion", assertion}});
  auto requesting = post_token_request(token_url(tenant), std::move(form), timeout_, name());
  co_return co_await std::move(requesting);
}

}  // namespace tensorstream::azure
