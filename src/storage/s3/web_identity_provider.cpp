#include "storage/s3/web_identity_provider.hpp"

#include "storage/s3/endpoint_request.hpp"
#include "storage/environment.hpp"
#include "storage/s3/sts_response.hpp"
#include "storage/s3/token_file.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "storage/s3/region.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {

WebIdentityProvider::WebIdentityProvider(std::string endpoint, std::chrono::milliseconds timeout)
    : endpoint_(std::move(endpoint)), timeout_(timeout) {}

std::string WebIdentityProvider::name() const { return "web identity"; }

boost::asio::awaitable<Credentials> WebIdentityProvider::get() {
  namespace http = boost::beast::http;
  const std::string token_file = environment("AWS_WEB_IDENTITY_TOKEN_FILE");
  const std::string role = environment("AWS_ROLE_ARN");
  if (token_file.empty()) {
    throw CredentialsError("AWS", name(), "AWS_WEB_IDENTITY_TOKEN_FILE is not set", false);
  }
  if (role.empty()) {
    throw CredentialsError("AWS", name(),
                           "AWS_WEB_IDENTITY_TOKEN_FILE is set but AWS_ROLE_ARN is not",
                           true);
  }
  std::string session = environment("AWS_ROLE_SESSION_NAME");
  if (session.empty()) {
    session =
        "tensorstream-" + std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                             std::chrono::system_clock::now().time_since_epoch())
                                             .count());
  }

  const std::string token = read_token_file(token_file, "AWS_WEB_IDENTITY_TOKEN_FILE", name());
  if (token.empty()) {
    throw CredentialsError("AWS", name(),
                           "AWS_WEB_IDENTITY_TOKEN_FILE " + token_file + " is empty", true);
  }

  std::string url = endpoint_.empty() ? environment("AWS_ENDPOINT_URL_STS") : endpoint_;
  if (url.empty()) {
    try {
      url = "https://sts." + resolve_region() + ".amazonaws.com";
    } catch (const InvalidArgument& error) {
      throw CredentialsError("AWS", name(), error.what(), true);
    }
  }
  if (!url.ends_with('/')) url.push_back('/');

  const std::string body =
      "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleArn=" + uri_encode(role, false) +
      "&RoleSessionName=" + uri_encode(session, false) +
      "&WebIdentityToken=" + uri_encode(token, false);
  const std::vector<HeaderField> headers{{"Content-Type", "application/x-www-form-urlencoded"}};
  const auto response =
      co_await endpoint_request(http::verb::post, url, headers, body, timeout_, name(), true);
  if (response.status != 200) {
    const std::string error = sts_error(response.body);
    throw CredentialsError("AWS", name(),
                           error.empty() ? describe_status(http::verb::post, url, response)
                                         : "POST " + url + ": AssumeRoleWithWebIdentity for " +
                                               role + " failed: HTTP " +
                                               std::to_string(response.status) + " " + error,
                           true);
  }
  co_return parse_web_identity_response(response.body, url, name());
}

}  // namespace tensorstream::s3
