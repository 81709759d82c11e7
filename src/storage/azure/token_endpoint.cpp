#include "storage/azure/token_endpoint.hpp"

#include "storage/azure/token_response.hpp"
#include "storage/environment.hpp"

namespace tensorstream::azure {

namespace http = boost::beast::http;

std::string authority_host() {
  std::string host = environment("AZURE_AUTHORITY_HOST");
  if (host.empty()) return std::string(default_authority_host);
  if (host.find("://") == std::string::npos) host = "https://" + host;
  while (host.ends_with('/')) host.pop_back();
  return host;
}

std::string token_url(const std::string& tenant) {
  return authority_host() + "/" + tenant + "/oauth2/v2.0/token";
}

std::string client_credentials_form(
    const std::string& client_id,
    std::initializer_list<std::pair<std::string_view, std::string_view>> credential) {
  std::string form = form_encode({{"grant_type", "client_credentials"},
                                  {"client_id", client_id},
                                  {"scope", storage_scope}});
  form += '&';
  form += form_encode(credential);
  return form;
}

boost::asio::awaitable<Credentials> request_token(
    http::verb method, std::string url, std::vector<std::pair<std::string, std::string>> headers,
    std::string body, std::chrono::milliseconds timeout, std::string provider, bool configured) {
  TokenRequester who{std::string(credentials_service), std::move(provider), configured};
  auto requesting = request_token_body(method, url, std::move(headers), std::move(body), timeout,
                                       who);
  const std::string answer = co_await std::move(requesting);
  co_return parse_token(answer, std::chrono::system_clock::now(), url, who);
}

boost::asio::awaitable<Credentials> post_token_request(std::string url, std::string form,
                                                       std::chrono::milliseconds timeout,
                                                       std::string provider) {
  std::vector<std::pair<std::string, std::string>> headers{
      {"Content-Type", "application/x-www-form-urlencoded"}};
  auto requesting = request_token(http::verb::post, std::move(url), std::move(headers),
                                  std::move(form), timeout, std::move(provider), true);
  co_return co_await std::move(requesting);
}

}  // namespace tensorstream::azure
