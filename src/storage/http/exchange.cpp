#include "storage/http/exchange.hpp"

#include "storage/http/network_failure.hpp"

namespace tensorstream {

void begin_request(Connection& connection, std::string_view method, std::string_view target,
                   std::string_view query, std::string_view host) {
  const Proxy* proxy = connection.forwarding_proxy();
  std::string& text = connection.request();
  text.clear();
  text += method;
  text += ' ';
  if (proxy != nullptr) {
    text += "http://";
    text += host;
  }
  text += target;
  if (!query.empty()) {
    text += target.find('?') == std::string_view::npos ? '?' : '&';
    text += query;
  }
  text += " HTTP/1.1\r\nHost: ";
  text += host;
  // Bodies are read byte for byte into tensors: no content coding may be applied.
  text += "\r\nAccept-Encoding: identity\r\nUser-Agent: tensorstream\r\n";
  if (proxy != nullptr && !proxy->authorization.empty()) {
    text += "Proxy-Authorization: ";
    text += proxy->authorization;
    text += "\r\n";
  }
}

boost::asio::awaitable<std::optional<Failure>> exchange(Connection& connection,
                                                        HeaderParser& parser,
                                                        std::chrono::milliseconds timeout,
                                                        std::span<const std::byte> body) {
  connection.set_reusable(false);
  parser.header_limit(header_limit);
  // Bodies never go through this parser; lifting the limit lets it accept any Content-Length.
  parser.body_limit(boost::none);
  if (auto ec = co_await connection.write_request(timeout)) {
    co_return exchange_failure(ec, timeout, true);
  }
  if (auto ec = co_await connection.write_body(body, timeout)) {
    co_return exchange_failure(ec, timeout, true);
  }
  // The client bounds the wait for the response by a timeout of its own, shorter than a body's:
  // a server that accepts requests and never answers is found out in seconds, not minutes.
  const auto& watch = connection.response_watch();
  const auto response_timeout = watch ? watch->timeout : timeout;
  ResponseWaits::Wait waiting;
  if (watch) waiting = watch->waits->begin(ResponseWaits::Phase::response, *watch->host);
  if (auto ec = co_await connection.read_header(parser, response_timeout)) {
    co_return exchange_failure(ec, response_timeout,
                               !parser.got_some() && connection.buffer().size() == 0);
  }
  connection.set_last_status(parser.get().result_int());
  co_return std::nullopt;
}

}  // namespace tensorstream
