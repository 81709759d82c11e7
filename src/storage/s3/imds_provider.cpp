#include "storage/s3/imds_provider.hpp"

#include <cctype>

#include "base/ascii.hpp"
#include "storage/environment.hpp"
#include "storage/s3/credentials_document.hpp"
#include "storage/s3/endpoint_request.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {
namespace {

namespace http = boost::beast::http;

// The SDKs' default token lifetime: 6 hours, the maximum IMDS grants.
constexpr std::string_view token_ttl_seconds = "21600";

// The body of a 200 response; any other status is a failure of the provider.
boost::asio::awaitable<std::string> fetch(http::verb method, std::string url,
                                          std::vector<HeaderField> headers,
                                          std::chrono::milliseconds timeout, std::string provider,
                                          bool configured) {
  auto response =
      co_await endpoint_request(method, url, headers, "", timeout, provider, configured);
  if (response.status != 200) {
    throw CredentialsError("AWS", provider, describe_status(method, url, response), configured);
  }
  co_return std::move(response.body);
}

}  // namespace

ImdsProvider::ImdsProvider(std::chrono::milliseconds timeout) : timeout_(timeout) {}

std::string ImdsProvider::name() const { return "EC2 instance metadata"; }

boost::asio::awaitable<Credentials> ImdsProvider::get() {
  if (ascii_lowercase(environment("AWS_EC2_METADATA_DISABLED")) == "true") {
    throw CredentialsError("AWS", name(), "disabled by AWS_EC2_METADATA_DISABLED=true", false);
  }
  std::string endpoint = environment("AWS_EC2_METADATA_SERVICE_ENDPOINT");
  const bool configured = !endpoint.empty();
  if (!configured) endpoint = "http://169.254.169.254";
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.pop_back();

  const std::vector<HeaderField> token_request{
      {"x-aws-ec2-metadata-token-ttl-seconds", std::string(token_ttl_seconds)}};
  const std::string token = co_await fetch(http::verb::put, endpoint + "/latest/api/token",
                                           token_request, timeout_, name(), configured);
  const std::vector<HeaderField> authorization{{"x-aws-ec2-metadata-token", token}};
  const std::string roles_url = endpoint + "/latest/meta-data/iam/security-credentials/";
  const std::string roles =
      co_await fetch(http::verb::get, roles_url, authorization, timeout_, name(), configured);
  // One role per instance profile; the listing is one name per line.
  std::string role = roles.substr(0, roles.find('\n'));
  while (!role.empty() && std::isspace(static_cast<unsigned char>(role.back()))) role.pop_back();
  if (role.empty()) {
    throw CredentialsError("AWS", name(), "GET " + roles_url + " lists no IAM role", configured);
  }
  const std::string role_url = roles_url + role;
  const std::string document =
      co_await fetch(http::verb::get, role_url, authorization, timeout_, name(), configured);
  co_return parse_credentials_document(document, role_url, name(), true);
}

}  // namespace tensorstream::s3
