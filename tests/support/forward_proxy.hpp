#pragma once
// A forwarding HTTP proxy, for testing clients that go through one.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "support/loopback_listener.hpp"

namespace tensorstream::testing {

/// An HTTP proxy on an ephemeral 127.0.0.1 port, running in its own thread, as curl and the
/// cloud SDKs expect one: `CONNECT host:port` opens a tunnel, and a request with an absolute URL
/// ("GET http://host:port/path HTTP/1.1") is forwarded, with the rest of its keep-alive
/// connection, to that server. Requests must have no body: the proxy finds each by the blank line
/// that ends its header.
class ForwardProxy {
 public:
  /// How to answer.
  struct Behaviour {
    /// Answer every CONNECT with this status (e.g. 403 or 407) instead of opening a tunnel; 0
    /// opens tunnels.
    unsigned refuse_connect = 0;
  };

  /// Starts a proxy that forwards everything.
  ForwardProxy();
  explicit ForwardProxy(Behaviour behaviour);

  ForwardProxy(const ForwardProxy&) = delete;
  ForwardProxy& operator=(const ForwardProxy&) = delete;

  /// "http://127.0.0.1:PORT".
  std::string url() const;

  /// The port, on 127.0.0.1.
  std::uint16_t port() const { return listener_.port(); }

  /// The request line of every request and CONNECT received, in order, e.g.
  /// "CONNECT 127.0.0.1:8443 HTTP/1.1"; requests inside tunnels are not seen.
  std::vector<std::string> requests() const;

  /// The Proxy-Authorization header of every request and CONNECT received ("" for none).
  std::vector<std::string> authorizations() const;

 private:
  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket client);
  // Records the request line and Proxy-Authorization of `header`.
  void record(const std::string& header);

  const Behaviour behaviour_;
  mutable std::mutex mutex_;
  std::vector<std::string> requests_;
  std::vector<std::string> authorizations_;
  LoopbackListener listener_;
};

}  // namespace tensorstream::testing
