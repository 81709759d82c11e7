#include "support/loopback_listener.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <utility>

namespace tensorstream::testing {

namespace asio = boost::asio;
using asio::ip::tcp;

LoopbackListener::LoopbackListener(Serve serve)
    : serve_(std::move(serve)),
      acceptor_(io_, tcp::endpoint(asio::ip::address_v4::loopback(), 0)),
      port_(acceptor_.local_endpoint().port()) {
  asio::co_spawn(io_, accept_loop(), [](std::exception_ptr) {});
  thread_ = std::thread([this] { io_.run(); });
}

LoopbackListener::~LoopbackListener() {
  io_.stop();
  thread_.join();
}

asio::awaitable<void> LoopbackListener::accept_loop() {
  for (;;) {
    auto [ec, socket] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec) co_return;
    asio::co_spawn(io_, serve_(std::move(socket)), [](std::exception_ptr) {});
  }
}

}  // namespace tensorstream::testing
