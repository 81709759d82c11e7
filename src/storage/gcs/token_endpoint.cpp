#include "storage/gcs/token_endpoint.hpp"

#include "storage/gcs/token_response.hpp"

namespace tensorstream::gcs {

namespace http = boost::beast::http;

boost::asio::awaitable<AccessToken> request_token(
    http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, const std::string& provider, bool configured) {
  auto requesting = request_token_body(method, url, headers, body, timeout,
                                       TokenRequester{"Google", provider, configured});
  const std::string answer = co_await std::move(requesting);
  co_return parse_token(answer, std::chrono::system_clock::now(), url, provider, configured);
}

boost::asio::awaitable<AccessToken> post_token_request(std::string url, std::string form,
                                                       std::chrono::milliseconds timeout,
                                                       std::string provider) {
  const std::vector<std::pair<std::string, std::string>> headers{
      {"Content-Type", "application/x-www-form-urlencoded"}};
  co_return co_await request_token(http::verb::post, url, headers, form, timeout, provider, true);
}

}  // namespace tensorstream::gcs
