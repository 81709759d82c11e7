#include "storage/gcs/token_endpoint.hpp"

#include <simdjson.h>

#include "storage/gcs/token_response.hpp"
#include "storage/http/endpoint_request.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::gcs {
namespace {

namespace http = boost::beast::http;

// "METHOD URL: HTTP 400 Bad Request: invalid_grant: Invalid JWT Signature." when the body is an
// OAuth error response (RFC 6749, section 5.2); the start of the body otherwise.
std::string describe_error(http::verb method, const std::string& url,
                           const EndpointResponse& response) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(response.body);
  simdjson::dom::object document;
  std::string_view error;
  if (parser.parse(padded).get(document) || document["error"].get(error)) {
    return describe_status(method, url, response);
  }
  std::string text = std::string(http::to_string(method)) + " " + url + ": HTTP " +
                     std::to_string(response.status) + " " + response.reason + ": " +
                     std::string(error);
  std::string_view description;
  if (!document["error_description"].get(description) && !description.empty()) {
    text += ": " + std::string(description);
  }
  return text;
}

}  // namespace

boost::asio::awaitable<AccessToken> request_token(
    http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, const std::string& provider, bool configured) {
  EndpointResponse response;
  try {
    response = co_await endpoint_request(method, url, headers, body, timeout, configured ? 3 : 1);
  } catch (const EndpointError& error) {
    throw CredentialsError("Google", provider, error.what(), configured);
  }
  if (response.status != 200) {
    throw CredentialsError("Google", provider, describe_error(method, url, response), configured);
  }
  co_return parse_token(response.body, std::chrono::system_clock::now(), url, provider,
                        configured);
}

std::string form_encode(
    std::initializer_list<std::pair<std::string_view, std::string_view>> fields) {
  std::string form;
  for (const auto& [name, value] : fields) {
    if (!form.empty()) form += '&';
    form += s3::uri_encode(name, false);
    form += '=';
    form += s3::uri_encode(value, false);
  }
  return form;
}

boost::asio::awaitable<AccessToken> post_token_request(std::string url, std::string form,
                                                       std::chrono::milliseconds timeout,
                                                       std::string provider) {
  const std::vector<std::pair<std::string, std::string>> headers{
      {"Content-Type", "application/x-www-form-urlencoded"}};
  co_return co_await request_token(http::verb::post, url, headers, form, timeout, provider, true);
}

}  // namespace tensorstream::gcs
