#pragma once
// One request to a credentials endpoint (instance metadata, container agents, STS, OAuth token
// endpoints, test fakes): small, rare exchanges that need none of the range client's pooling or
// retries.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tensorstream/error.hpp"

namespace tensorstream {

/// A whole response of a credentials endpoint.
struct EndpointResponse {
  unsigned status = 0;
  std::string reason;  ///< e.g. "Not Found".
  std::string body;
};

/// A request to a credentials endpoint got no response; what() says which request and why, e.g.
/// "GET http://169.254.169.254/latest/api/token: timed out after 1000 ms". Callers rethrow it as
/// their service's credentials error.
class EndpointError : public Error {
 public:
  using Error::Error;
};

/// Finds the addresses of a host and port (both as in a URL). It must end promptly, throwing
/// boost::system::system_error(operation_aborted), when its coroutine is cancelled.
using EndpointResolver =
    std::function<boost::asio::awaitable<boost::asio::ip::tcp::resolver::results_type>(
        std::string host, std::string port)>;

/// The system's resolver (getaddrinfo, on a thread of Asio's). Cancelling it abandons a lookup
/// that cannot be interrupted: the lookup finishes in the background, and until it does the
/// caller's io_context has work outstanding.
boost::asio::awaitable<boost::asio::ip::tcp::resolver::results_type> system_resolve(
    std::string host, std::string port);

/// Sends `method url` with `headers` and `body` on a fresh connection and reads the whole
/// response (at most 1 MiB), everything, name resolution with `resolve` included, within
/// `timeout`. https verifies the server against the system's CAs (OpenSSL's default paths, which
/// honour SSL_CERT_FILE) and its host name.
///
/// Never throws for an HTTP status. Cancelling the calling coroutine throws
/// boost::system::system_error(operation_aborted). Any other failure throws EndpointError naming
/// the URL and what went wrong ("timed out after 1000 ms", "Connection refused", "certificate
/// verify failed", a URL that is not http(s)://).
boost::asio::awaitable<EndpointResponse> endpoint_request(
    boost::beast::http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, EndpointResolver resolve = system_resolve);

/// endpoint_request(), tried again while it fails without a response or answers 408, 429 or
/// 5xx, up to `attempts` times in all, 100 ms, then 200 ms, ... apart; returns or throws the
/// last outcome (cancellation ends it at once). Credential sources that are configured get a
/// few attempts, as the cloud SDKs give them; sources merely probed (a metadata server that may
/// not exist) get one, so that a chain moves on at once.
boost::asio::awaitable<EndpointResponse> endpoint_request(
    boost::beast::http::verb method, const std::string& url,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    std::chrono::milliseconds timeout, int attempts);

/// "METHOD URL: HTTP 404 Not Found: <start of the body>", for errors about a response.
std::string describe_status(boost::beast::http::verb method, const std::string& url,
                            const EndpointResponse& response);

}  // namespace tensorstream
