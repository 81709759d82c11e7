#include "storage/s3/container_provider.hpp"

#include "storage/s3/credentials_document.hpp"
#include "storage/s3/endpoint_request.hpp"
#include "storage/environment.hpp"
#include "storage/s3/token_file.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::s3 {
namespace {

namespace http = boost::beast::http;

bool allowed_full_uri_host(const std::string& host) {
  return host == "localhost" || host == "::1" || host.starts_with("127.") ||
         host == "169.254.170.2" || host == "169.254.170.23";
}

}  // namespace

ContainerProvider::ContainerProvider(std::string agent, std::chrono::milliseconds timeout)
    : agent_(std::move(agent)), timeout_(timeout) {}

std::string ContainerProvider::name() const { return "container endpoint"; }

boost::asio::awaitable<Credentials> ContainerProvider::get() {
  const std::string relative = environment("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
  const std::string full = environment("AWS_CONTAINER_CREDENTIALS_FULL_URI");
  if (relative.empty() && full.empty()) {
    throw CredentialsError("AWS",
        name(),
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and AWS_CONTAINER_CREDENTIALS_FULL_URI are not set",
        false);
  }
  std::string url;
  if (!relative.empty()) {
    url = agent_ + relative;
  } else {
    url = full;
    std::string host;
    try {
      host = Url::parse(full).host;
    } catch (const InvalidArgument& error) {
      throw CredentialsError("AWS",
          name(), "AWS_CONTAINER_CREDENTIALS_FULL_URI: " + std::string(error.what()), true);
    }
    if (!allowed_full_uri_host(host)) {
      throw CredentialsError("AWS", name(),
                             "AWS_CONTAINER_CREDENTIALS_FULL_URI " + full +
                                 ": host must be loopback, 169.254.170.2 or "
                                 "169.254.170.23",
                             true);
    }
  }

  std::vector<HeaderField> headers;
  std::string token = environment("AWS_CONTAINER_AUTHORIZATION_TOKEN");
  const std::string token_file = environment("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
  if (!token_file.empty()) {
    token = read_token_file(token_file, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", name());
  }
  if (!token.empty()) headers.emplace_back("Authorization", token);

  const auto response =
      co_await endpoint_request(http::verb::get, url, headers, "", timeout_, name(), true);
  if (response.status != 200) {
    throw CredentialsError("AWS", name(), describe_status(http::verb::get, url, response), true);
  }
  co_return parse_credentials_document(response.body, url, name(), true);
}

}  // namespace tensorstream::s3
