#pragma once
// The completion token of the test servers' coroutines: they handle every failure of a socket
// themselves, so an operation's error code comes back with its result instead of as an exception.

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tensorstream::testing {

/// `co_await op(..., use_tuple)` yields the tuple (error_code, results...).
inline constexpr auto use_tuple = boost::asio::as_tuple(boost::asio::use_awaitable);

}  // namespace tensorstream::testing
