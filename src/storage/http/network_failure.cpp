#include "storage/http/network_failure.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>
#include <string>

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;

// The server closed the connection, cleanly or not, or TLS saw it vanish without close_notify.
bool is_closed(const beast::error_code& ec) {
  return ec == asio::error::eof || ec == beast::http::error::end_of_stream ||
         ec == beast::http::error::partial_message || ec == asio::ssl::error::stream_truncated;
}

bool is_reset(const beast::error_code& ec) {
  return ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
         ec == asio::error::connection_aborted;
}

// Beast's HTTP parser rejected what the server sent.
bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == beast::http::make_error_code(beast::http::error::bad_version).category();
}

std::string no_data(std::chrono::milliseconds timeout) {
  return "no data for " + std::to_string(timeout.count()) + " ms";
}

}  // namespace

Failure exchange_failure(const beast::error_code& ec, std::chrono::milliseconds timeout,
                         bool nothing_received) {
  if (ec == beast::error::timeout) {
    return transient_failure(nothing_received
                                 ? "no response for " + std::to_string(timeout.count()) + " ms"
                                 : no_data(timeout));
  }
  if (is_closed(ec) || is_reset(ec)) {
    Failure failure =
        transient_failure(is_reset(ec) ? "connection reset by peer before the response"
                                       : "connection closed before the response");
    failure.before_response = nothing_received;
    return failure;
  }
  if (ec == beast::http::error::header_limit) {
    return permanent_failure("response header larger than the 16 KiB limit");
  }
  if (is_parse_error(ec)) {
    Failure failure = permanent_failure("malformed response: " + ec.message());
    failure.malformed = true;
    return failure;
  }
  return transient_failure(ec.message());
}

Failure body_failure(const beast::error_code& ec, std::chrono::milliseconds timeout,
                     std::uint64_t received, std::uint64_t expected) {
  const std::string progress =
      std::to_string(received) + " of " + std::to_string(expected) + " bytes";
  if (ec == beast::error::timeout) {
    return transient_failure("body stalled after " + progress + ": " + no_data(timeout));
  }
  if (is_closed(ec)) {
    return transient_failure("truncated body: connection closed after " + progress);
  }
  if (is_reset(ec)) return transient_failure("connection reset by peer after " + progress);
  if (is_parse_error(ec)) {
    return transient_failure("malformed body after " + progress + ": " + ec.message());
  }
  return transient_failure(ec.message() + " after " + progress);
}

}  // namespace tensorstream
