#pragma once
// How the test servers end a response they break on purpose.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstddef>
#include <string_view>

namespace tensorstream::testing {

/// What happens once a response (or the part of it that is sent) has been written.
enum class ResponseEnding {
  keep_alive,  ///< Nothing: the connection serves the next request.
  close,       ///< A clean close, cutting short any body still announced.
  reset,       ///< A TCP reset.
  stall,       ///< Silence until the client gives up and closes the connection.
};

/// Writes `header` and `body` to `socket` and ends as `ending` says. Returns whether the
/// connection can serve another request.
boost::asio::awaitable<bool> write_response(boost::asio::ip::tcp::socket& socket,
                                            std::string_view header, std::string_view body,
                                            ResponseEnding ending);

}  // namespace tensorstream::testing
