#include "storage/s3/endpoint_request.hpp"

#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

boost::asio::awaitable<EndpointResponse> endpoint_request(
    boost::beast::http::verb method, const std::string& url, const std::vector<HeaderField>& headers,
    const std::string& body, std::chrono::milliseconds timeout, const std::string& provider,
    bool configured) {
  const int attempts = configured ? 3 : 1;
  try {
    co_return co_await tensorstream::endpoint_request(method, url, headers, body, timeout,
                                                      attempts);
  } catch (const EndpointError& error) {
    throw CredentialsError("AWS", provider, error.what(), configured);
  }
}

}  // namespace tensorstream::s3
