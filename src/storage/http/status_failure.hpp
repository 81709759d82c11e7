#pragma once
// What an HTTP error status means for a request.

#include <boost/asio/awaitable.hpp>
#include <chrono>

#include "storage/http/connection.hpp"
#include "storage/http/failure.hpp"

namespace tensorstream {

/// "HTTP 503 Service Unavailable": the status code with its standard reason phrase, or the
/// server's for codes without one.
std::string status_text(const HeaderParser& parser);

/// The failure a response with an unexpected status stands for, e.g. "HTTP 404 Not Found".
/// 408, 429 and 5xx are transient; 404 is not_found; a redirect's Location is kept in
/// Failure::location for the caller to follow, and the cause says it was not followed.
/// A short body is read, kept in Failure::body and, when it is text, quoted in the cause (up to
/// 200 bytes); reading it also keeps the connection reusable. A long body closes the connection.
/// Consumes `parser`.
boost::asio::awaitable<Failure> status_failure(Connection& connection, HeaderParser&& parser,
                                               std::chrono::milliseconds timeout);

}  // namespace tensorstream
