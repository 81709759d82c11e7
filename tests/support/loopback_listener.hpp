#pragma once
// The listening half of the test servers written in C++: accepting on loopback, on a thread of
// its own.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <functional>
#include <thread>

namespace tensorstream::testing {

/// Accepts connections on an ephemeral 127.0.0.1 port and runs `serve` for each, all on one
/// thread, from construction until destruction. A server owning a listener declares it last, so
/// that the listener stops before anything `serve` uses is destroyed.
class LoopbackListener {
 public:
  /// Serves one accepted connection.
  using Serve = std::function<boost::asio::awaitable<void>(boost::asio::ip::tcp::socket)>;

  /// Starts listening and serving.
  explicit LoopbackListener(Serve serve);

  /// Stops the thread; connections still open are dropped.
  ~LoopbackListener();

  LoopbackListener(const LoopbackListener&) = delete;
  LoopbackListener& operator=(const LoopbackListener&) = delete;

  /// The port, on 127.0.0.1.
  std::uint16_t port() const { return port_; }

 private:
  boost::asio::awaitable<void> accept_loop();

  Serve serve_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace tensorstream::testing
