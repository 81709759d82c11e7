#pragma once
// Sending a request and receiving its response header.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "storage/http/connection.hpp"
#include "storage/http/failure.hpp"

namespace tensorstream {

/// Largest response header accepted; S3 and GCS send a few KiB at most.
inline constexpr std::uint32_t header_limit = 16 * 1024;

/// Replaces connection.request() with the request line and the headers every request carries;
/// the caller appends its own headers and the blank line that ends the header. `query`, when not
/// empty, is appended to the target's query (credentials that travel in the URL). Through a plain
/// HTTP proxy the target is the absolute URL and the proxy's credentials are added.
void begin_request(Connection& connection, std::string_view method, std::string_view target,
                   std::string_view query, std::string_view host);

/// Sends connection.request(), then `body` (which the request's header announced), and reads the
/// response header into `parser`, leaving the connection marked not reusable until the caller has
/// read the body. Each operation is bounded by `timeout`, but for the wait for the response when
/// the connection has a response watch, whose timeout bounds it and whose waits show it. A
/// failure before any byte of the response arrived is marked before_response.
boost::asio::awaitable<std::optional<Failure>> exchange(Connection& connection,
                                                        HeaderParser& parser,
                                                        std::chrono::milliseconds timeout,
                                                        std::span<const std::byte> body = {});

}  // namespace tensorstream
