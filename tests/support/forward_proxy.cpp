#include "support/forward_proxy.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <memory>
#include <utility>

namespace tensorstream::testing {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

constexpr std::string_view end_of_header = "\r\n\r\n";

// The value of header `name` (given as "\r\nName: ") in `header`; "" when absent.
std::string header_value(const std::string& header, std::string_view name) {
  const auto start = header.find(name);
  if (start == std::string::npos) return {};
  const auto value = start + name.size();
  return header.substr(value, header.find("\r\n", value) - value);
}

// "host:port" of an absolute URL "http://host:port/path" or of a CONNECT target.
std::pair<std::string, std::string> host_and_port(std::string_view authority) {
  const auto colon = authority.rfind(':');
  if (colon == std::string_view::npos) return {std::string(authority), "80"};
  std::string host(authority.substr(0, colon));
  if (host.starts_with('[')) host = host.substr(1, host.size() - 2);
  return {host, std::string(authority.substr(colon + 1))};
}

asio::awaitable<void> pump(std::shared_ptr<tcp::socket> from, std::shared_ptr<tcp::socket> to,
                           std::function<void(std::string_view)> seen = {}) {
  std::array<char, 16384> buffer;
  for (;;) {
    auto [read_error, n] =
        co_await from->async_read_some(asio::buffer(buffer), asio::as_tuple(asio::use_awaitable));
    if (read_error) break;
    if (seen) seen(std::string_view(buffer.data(), n));
    auto [write_error, written] = co_await asio::async_write(*to, asio::buffer(buffer.data(), n),
                                                             asio::as_tuple(asio::use_awaitable));
    if (write_error) break;
  }
  boost::system::error_code ignored;
  from->close(ignored);
  to->close(ignored);
}

}  // namespace

ForwardProxy::ForwardProxy() : ForwardProxy(Behaviour{}) {}

ForwardProxy::ForwardProxy(Behaviour behaviour)
    : behaviour_(behaviour),
      listener_([this](tcp::socket socket) { return serve(std::move(socket)); }) {}

std::string ForwardProxy::url() const { return "http://127.0.0.1:" + std::to_string(port()); }

std::vector<std::string> ForwardProxy::requests() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

std::vector<std::string> ForwardProxy::authorizations() const {
  std::lock_guard lock(mutex_);
  return authorizations_;
}

void ForwardProxy::record(const std::string& header) {
  std::lock_guard lock(mutex_);
  requests_.push_back(header.substr(0, header.find("\r\n")));
  authorizations_.push_back(header_value(header, "\r\nProxy-Authorization: "));
}

asio::awaitable<void> ForwardProxy::serve(tcp::socket accepted) {
  auto client = std::make_shared<tcp::socket>(std::move(accepted));
  std::string received;
  auto [read_error, length] = co_await asio::async_read_until(
      *client, asio::dynamic_buffer(received), end_of_header, asio::as_tuple(asio::use_awaitable));
  if (read_error) co_return;
  const std::string header = received.substr(0, length);
  record(header);
  const auto method_end = header.find(' ');
  const std::string method = header.substr(0, method_end);
  const std::string target =
      header.substr(method_end + 1, header.find(' ', method_end + 1) - method_end - 1);

  std::string authority;
  if (method == "CONNECT") {
    if (behaviour_.refuse_connect != 0) {
      const std::string answer = "HTTP/1.1 " + std::to_string(behaviour_.refuse_connect) +
                                 " Refused\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      co_await asio::async_write(*client, asio::buffer(answer),
                                 asio::as_tuple(asio::use_awaitable));
      co_return;
    }
    authority = target;
  } else {
    if (!target.starts_with("http://")) co_return;
    authority = target.substr(7, target.find('/', 7) - 7);
  }
  const auto [host, port] = host_and_port(authority);
  auto server = std::make_shared<tcp::socket>(client->get_executor());
  tcp::resolver resolver(client->get_executor());
  auto [resolve_error, endpoints] =
      co_await resolver.async_resolve(host, port, asio::as_tuple(asio::use_awaitable));
  if (resolve_error) co_return;
  auto [connect_error, endpoint] =
      co_await asio::async_connect(*server, endpoints, asio::as_tuple(asio::use_awaitable));
  if (connect_error) co_return;

  std::function<void(std::string_view)> seen;
  if (method == "CONNECT") {
    const std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
    co_await asio::async_write(*client, asio::buffer(established),
                               asio::as_tuple(asio::use_awaitable));
    // A client speaks first in TLS: nothing can have come after the CONNECT's header.
  } else {
    // The server takes absolute URLs as HTTP/1.1 requires; later requests of the connection are
    // recorded as their headers complete.
    auto pending = std::make_shared<std::string>(received.substr(length));
    seen = [this, pending](std::string_view bytes) {
      pending->append(bytes);
      for (auto end = pending->find(end_of_header); end != std::string::npos;
           end = pending->find(end_of_header)) {
        record(pending->substr(0, end + end_of_header.size()));
        pending->erase(0, end + end_of_header.size());
      }
    };
    co_await asio::async_write(*server, asio::buffer(received),
                               asio::as_tuple(asio::use_awaitable));
    seen({});
  }
  asio::co_spawn(client->get_executor(), pump(server, client), asio::detached);
  co_await pump(client, server, std::move(seen));
}

}  // namespace tensorstream::testing
