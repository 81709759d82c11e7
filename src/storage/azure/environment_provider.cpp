#include "storage/azure/environment_provider.hpp"

#include "storage/azure/client_certificate.hpp"
#include "storage/azure/credential_file.hpp"
#include "storage/azure/token_endpoint.hpp"
#include "storage/environment.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::azure {
namespace {

// The client assertion of the certificate in the PEM file at `path`, for `client_id` at the
// token endpoint `url`. Throws InvalidArgument "PATH: REASON".
std::string certificate_assertion(const std::string& path, const std::string& client_id,
                                  const std::string& url) {
  const std::string pem = read_credential_file(path);
  try {
    const auto certificate =
        ClientCertificate::parse(pem, environment("AZURE_CLIENT_CERTIFICATE_PASSWORD"));
    return client_assertion(certificate, client_id, url, std::chrono::system_clock::now());
  } catch (const InvalidArgument& error) {
    throw InvalidArgument(path + ": " + error.what());
  }
}

}  // namespace

EnvironmentProvider::EnvironmentProvider(std::chrono::milliseconds timeout) : timeout_(timeout) {}

std::string EnvironmentProvider::name() const { return "environment"; }

boost::asio::awaitable<Credentials> EnvironmentProvider::get() {
  const std::string tenant = environment("AZURE_TENANT_ID");
  const std::string client_id = environment("AZURE_CLIENT_ID");
  const std::string secret = environment("AZURE_CLIENT_SECRET");
  const std::string certificate_path = environment("AZURE_CLIENT_CERTIFICATE_PATH");
  const TokenRequester absent{std::string(credentials_service), name(), false};
  if (tenant.empty()) throw absent.error("AZURE_TENANT_ID is not set");
  if (client_id.empty()) throw absent.error("AZURE_CLIENT_ID is not set");
  if (secret.empty() && certificate_path.empty()) {
    throw absent.error("neither AZURE_CLIENT_SECRET nor AZURE_CLIENT_CERTIFICATE_PATH is set");
  }
  std::string url = token_url(tenant);
  std::string form;
  if (!secret.empty()) {
    form = client_credentials_form(client_id, {{"client_secret", secret}});
  } else {
    std::string assertion;
    try {
      assertion = certificate_assertion(certificate_path, client_id, url);
    } catch (const InvalidArgument& error) {
      throw CredentialsError(std::string(credentials_service), name(), error.what(), true);
    }
    form = client_credentials_form(client_id, {{"client_assertion_type", jwt_bearer_assertion},
                                               {"client_assertion", assertion}});
  }
  auto requesting = post_token_request(std::move(url), std::move(form), timeout_, name());
  co_return co_await std::move(requesting);
}

}  // namespace tensorstream::azure
