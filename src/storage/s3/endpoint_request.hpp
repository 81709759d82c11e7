#pragma once
// One request to a credentials endpoint (instance metadata, container agent, STS, test fakes):
// small, rare exchanges that need none of the range client's pooling or retries.

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "tensorstream/storage/s3/sigv4.hpp"

namespace tensorstream::s3 {

/// A whole response of a credentials endpoint.
struct EndpointResponse {
  unsigned status = 0;
  std::string reason;  ///< e.g. "Not Found".
  std::string body;
};

/// Sends `method url` with `headers` and `body` on a fresh connection and reads the whole
/// response (at most 1 MiB), everything within `timeout`. https verifies the server against
/// the system's CAs (OpenSSL's default paths, which honour SSL_CERT_FILE) and its host name.
///
/// Never throws for an HTTP status. Any other failure throws CredentialsError(`provider`, cause,
/// `configured`) whose cause names the URL and what went wrong ("timed out after 1000 ms",
/// "Connection refused", "certificate verify failed", a URL that is not http(s)://).
boost::asio::awaitable<EndpointResponse> endpoint_request(
    boost::beast::http::verb method, const std::string& url, const std::vector<Header>& headers,
    const std::string& body, std::chrono::milliseconds timeout, const std::string& provider,
    bool configured);

/// "METHOD URL: HTTP 404 Not Found: <start of the body>", for errors about a response.
std::string describe_status(boost::beast::http::verb method, const std::string& url,
                            const EndpointResponse& response);

}  // namespace tensorstream::s3
