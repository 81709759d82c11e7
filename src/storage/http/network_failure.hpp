#pragma once
// Turning socket, TLS and parser errors of a request into failures with readable causes.

#include <boost/beast/core/error.hpp>
#include <chrono>
#include <cstdint>

#include "storage/http/failure.hpp"

namespace tensorstream {

/// An error while sending a request or reading the response header. `nothing_received` says
/// that not a byte of the response had arrived.
Failure exchange_failure(const boost::beast::error_code& ec, std::chrono::milliseconds timeout,
                         bool nothing_received);

/// An error while reading a body, after `received` of the `expected` bytes.
Failure body_failure(const boost::beast::error_code& ec, std::chrono::milliseconds timeout,
                     std::uint64_t received, std::uint64_t expected);

}  // namespace tensorstream
