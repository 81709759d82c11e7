#include "support/response_ending.hpp"

#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/write.hpp>

#include "support/use_tuple.hpp"

namespace tensorstream::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

asio::awaitable<bool> write_response(tcp::socket& socket, std::string_view header,
                                     std::string_view body, ResponseEnding ending) {
  const std::array<asio::const_buffer, 2> message{asio::buffer(header), asio::buffer(body)};
  if (auto [ec, n] = co_await asio::async_write(socket, message, use_tuple); ec) co_return false;
  boost::system::error_code ignored;
  switch (ending) {
    case ResponseEnding::keep_alive:
      co_return true;
    case ResponseEnding::stall:
      co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
      co_return false;
    case ResponseEnding::reset:
      socket.set_option(asio::socket_base::linger(true, 0), ignored);
      socket.close(ignored);
      co_return false;
    case ResponseEnding::close:
      socket.shutdown(tcp::socket::shutdown_both, ignored);
      socket.close(ignored);
      co_return false;
  }
  co_return false;
}

}  // namespace tensorstream::testing
