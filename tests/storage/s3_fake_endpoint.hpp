#pragma once
// A scripted HTTP endpoint standing in for instance metadata, the container agent or STS.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <cctype>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tensorstream::s3::testing {

/// An HTTP/1.1 server on an ephemeral 127.0.0.1 port, in its own thread, that answers every
/// request with what a handler returns (one request per connection) and records the requests.
class FakeEndpoint {
 public:
  /// A request as received; header names in lower case.
  struct Request {
    std::string method;
    std::string target;
    std::map<std::string, std::string> headers;
    std::string body;

    /// The value of header `name` (lower case), "<absent>" when it was not sent.
    std::string header(const std::string& name) const {
      const auto found = headers.find(name);
      return found == headers.end() ? "<absent>" : found->second;
    }
  };

  /// What to answer.
  struct Reply {
    unsigned status = 200;
    std::string body;
    bool stall = false;  ///< Answer nothing and keep the connection open.
  };

  using Handler = std::function<Reply(const Request&)>;

  explicit FakeEndpoint(Handler handler)
      : handler_(std::move(handler)),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    boost::asio::co_spawn(io_, accept_loop(), boost::asio::detached);
    thread_ = std::thread([this] { io_.run(); });
  }

  ~FakeEndpoint() {
    io_.stop();
    thread_.join();
  }

  FakeEndpoint(const FakeEndpoint&) = delete;
  FakeEndpoint& operator=(const FakeEndpoint&) = delete;

  /// "http://127.0.0.1:PORT".
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  /// The requests received so far, in order.
  std::vector<Request> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  /// "http://127.0.0.1:PORT" of a port nothing listens on (bound, then released).
  static std::string closed_url() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    return "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  }

 private:
  boost::asio::awaitable<void> accept_loop() {
    for (;;) {
      auto socket = co_await acceptor_.async_accept(boost::asio::use_awaitable);
      boost::asio::co_spawn(io_, serve(std::move(socket)), boost::asio::detached);
    }
  }

  boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    try {
      boost::beast::flat_buffer buffer;
      http::request<http::string_body> incoming;
      co_await http::async_read(socket, buffer, incoming, boost::asio::use_awaitable);
      Request request{std::string(incoming.method_string()),
                      std::string(incoming.target()),
                      {},
                      incoming.body()};
      for (const auto& field : incoming) {
        std::string name(field.name_string());
        for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        request.headers[name] = std::string(field.value());
      }
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
      }
      const Reply reply = handler_(request);
      if (reply.stall) {
        // Parks this coroutine, and with it the open connection, until the server stops.
        boost::asio::steady_timer forever(io_, std::chrono::hours(24));
        co_await forever.async_wait(boost::asio::use_awaitable);
      }
      http::response<http::string_body> response(static_cast<http::status>(reply.status), 11);
      response.body() = reply.body;
      response.keep_alive(false);
      response.prepare_payload();
      co_await http::async_write(socket, response, boost::asio::use_awaitable);
    } catch (const std::exception&) {
      // The client went away; nothing to answer.
    }
  }

  // The io_context first, so that the acceptor is destroyed before it.
  boost::asio::io_context io_;
  Handler handler_;
  mutable std::mutex mutex_;
  std::vector<Request> requests_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace tensorstream::s3::testing
