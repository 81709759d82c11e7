#include "storage/oauth_token.hpp"

#include <simdjson.h>

#include "storage/http/endpoint_request.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream {
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

boost::asio::awaitable<std::string> request_token_body(
    http::verb method, std::string url, std::vector<std::pair<std::string, std::string>> headers,
    std::string body, std::chrono::milliseconds timeout, TokenRequester who) {
  EndpointResponse response;
  const int attempts = who.configured ? 3 : 1;
  try {
    response = co_await endpoint_request(method, url, headers, body, timeout, attempts);
  } catch (const EndpointError& error) {
    throw who.error(error.what());
  }
  if (response.status != 200) throw who.error(describe_error(method, url, response));
  co_return std::move(response.body);
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

}  // namespace tensorstream
