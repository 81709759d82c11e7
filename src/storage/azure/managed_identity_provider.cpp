#include "storage/azure/managed_identity_provider.hpp"

#include "storage/azure/token_endpoint.hpp"
#include "storage/environment.hpp"

namespace tensorstream::azure {
namespace {

constexpr std::string_view imds_token_path = "/metadata/identity/oauth2/token";

// "api-version=V&resource=...", with the user-assigned identity's client_id when one is set.
std::string token_query(std::string_view api_version) {
  std::string query =
      form_encode({{"api-version", api_version}, {"resource", storage_resource}});
  if (const std::string client_id = environment("AZURE_CLIENT_ID"); !client_id.empty()) {
    query += "&" + form_encode({{"client_id", client_id}});
  }
  return query;
}

}  // namespace

ManagedIdentityProvider::ManagedIdentityProvider(std::chrono::milliseconds probe_timeout,
                                                 std::chrono::milliseconds timeout)
    : probe_timeout_(probe_timeout), timeout_(timeout) {}

std::string ManagedIdentityProvider::name() const { return "managed identity"; }

boost::asio::awaitable<Credentials> ManagedIdentityProvider::get() {
  namespace http = boost::beast::http;
  const std::string endpoint = environment("IDENTITY_ENDPOINT");
  const std::string secret_header = environment("IDENTITY_HEADER");
  if (!endpoint.empty() && !secret_header.empty()) {
    std::string url = endpoint + (endpoint.find('?') == std::string::npos ? "?" : "&") +
                      token_query("2019-08-01");
    std::vector<std::pair<std::string, std::string>> headers{
        {"X-IDENTITY-HEADER", secret_header}};
    auto requesting = request_token(http::verb::get, std::move(url), std::move(headers), "",
                                    timeout_, name(), true);
    co_return co_await std::move(requesting);
  }
  std::string authority = environment("AZURE_POD_IDENTITY_AUTHORITY_HOST");
  const bool configured = !authority.empty();
  if (!configured) authority = imds_authority;
  if (authority.find("://") == std::string::npos) authority = "http://" + authority;
  while (authority.ends_with('/')) authority.pop_back();
  std::string url = authority + std::string(imds_token_path) + "?" + token_query("2018-02-01");
  std::vector<std::pair<std::string, std::string>> headers{{"Metadata", "true"}};
  auto requesting = request_token(http::verb::get, std::move(url), std::move(headers), "",
                                  configured ? timeout_ : probe_timeout_, name(), configured);
  co_return co_await std::move(requesting);
}

}  // namespace tensorstream::azure
