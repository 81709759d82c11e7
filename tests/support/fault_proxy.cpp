#include "support/fault_proxy.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>

#include "support/response_ending.hpp"
#include "support/use_tuple.hpp"

namespace tensorstream::testing {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;


// The upstream's answer to `request`, read whole; nullopt when the upstream fails.
asio::awaitable<std::optional<http::response<http::string_body>>> forward(
    http::request<http::string_body> request, std::uint16_t port) {
  tcp::socket upstream(co_await asio::this_coro::executor);
  if (auto [ec] = co_await upstream.async_connect(
          tcp::endpoint(asio::ip::address_v4::loopback(), port), use_tuple);
      ec) {
    co_return std::nullopt;
  }
  request.keep_alive(false);
  if (auto [ec, n] = co_await http::async_write(upstream, request, use_tuple); ec) {
    co_return std::nullopt;
  }
  boost::beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(boost::none);
  if (request.method() == http::verb::head) parser.skip(true);
  if (auto [ec, n] = co_await http::async_read(upstream, buffer, parser, use_tuple); ec) {
    co_return std::nullopt;
  }
  co_return parser.release();
}

// The response header as bytes on the wire, announcing the whole body whatever part of it is
// sent; a HEAD response keeps the upstream's Content-Length, the size of what GET would send.
std::string header_of(const http::response<http::string_body>& response, bool head) {
  std::string text = "HTTP/1.1 " + std::to_string(response.result_int()) + " " +
                     std::string(response.reason()) + "\r\n";
  for (const auto& field : response) {
    if (field.name() == http::field::connection ||
        field.name() == http::field::transfer_encoding ||
        (field.name() == http::field::content_length && !head)) {
      continue;
    }
    text += std::string(field.name_string()) + ": " + std::string(field.value()) + "\r\n";
  }
  if (!head) text += "Content-Length: " + std::to_string(response.body().size()) + "\r\n";
  return text + "\r\n";
}

}  // namespace

FaultProxy::FaultProxy(std::uint16_t upstream_port, Faults faults)
    : upstream_port_(upstream_port),
      faults_(std::move(faults)),
      random_(faults_.seed),
      listener_([this](tcp::socket socket) { return serve(std::move(socket)); }) {}

std::string FaultProxy::endpoint() const {
  return "http://127.0.0.1:" + std::to_string(listener_.port());
}

FaultProxy::MixFault FaultProxy::draw() {
  std::lock_guard lock(random_mutex_);
  if (std::uniform_real_distribution<double>(0, 1)(random_) >= faults_.mix_rate) {
    return MixFault::count;
  }
  const auto kinds = static_cast<int>(MixFault::count);
  return static_cast<MixFault>(std::uniform_int_distribution<int>(0, kinds - 1)(random_));
}

asio::awaitable<void> FaultProxy::serve(tcp::socket socket) {
  boost::beast::flat_buffer buffer;
  const int counted =
      faults_.fail_first + faults_.stall_first + faults_.reset_first + faults_.truncate_first;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(boost::none);
    if (auto [ec, n] = co_await http::async_read_header(socket, buffer, parser, use_tuple); ec) {
      co_return;
    }
    const bool upload = parser.get().method() == http::verb::put;
    // Leave the counts of requests in flight when the answer went out or the connection ended.
    struct InFlight {
      std::atomic<int>* count = nullptr;
      ~InFlight() {
        if (count) --*count;
      }
    } in_flight, request_in_flight{&requests_in_flight_};
    ++requests_in_flight_;
    const int upload_number = upload ? uploads_++ : -1;
    if (upload) {
      const int number = upload_number;
      in_flight.count = &uploads_in_flight_;
      const int now = ++uploads_in_flight_;
      int seen = max_uploads_in_flight_.load();
      while (now > seen && !max_uploads_in_flight_.compare_exchange_weak(seen, now)) {
      }
      const int reset_from = faults_.upload_fail_first;
      if (number >= reset_from && number < reset_from + faults_.upload_reset_first) {
        while (!parser.is_done() && parser.get().body().size() < faults_.upload_cut_after) {
          auto [ec, n] = co_await http::async_read_some(socket, buffer, parser, use_tuple);
          if (ec) co_return;
        }
        ++injected_;
        co_await write_response(socket, {}, {}, ResponseEnding::reset);
        co_return;
      }
    }
    if (auto [ec, n] = co_await http::async_read(socket, buffer, parser, use_tuple); ec) co_return;
    http::request<http::string_body> request = parser.release();
    while (losing_.load() > 0) {
      asio::steady_timer poll(socket.get_executor(), std::chrono::milliseconds(5));
      co_await poll.async_wait(use_tuple);
    }
    if (faults_.answer) {
      const std::string answer = faults_.answer(std::string(request.method_string()),
                                                std::string(request.target()));
      if (!answer.empty()) {
        auto [ec, n] = co_await asio::async_write(socket, asio::buffer(answer), use_tuple);
        if (ec) co_return;
        continue;
      }
    }
    if (faults_.lose_answer && faults_.lose_answer(std::string(request.method_string()),
                                                   std::string(request.target()))) {
      ++injected_;
      ++losing_;
      co_await forward(std::move(request), upstream_port_);
      --losing_;
      co_await write_response(socket, {}, {}, ResponseEnding::stall);
      co_return;
    }
    const bool failed_upload = upload && upload_number < faults_.upload_fail_first;
    const bool head = request.method() == http::verb::head;
    const bool read = request.method() == http::verb::get && request.count(http::field::range);
    const int number = read ? reads_++ : -1;
    int fault = number;
    const MixFault mixed =
        fault >= counted && faults_.mix_rate > 0 ? draw() : MixFault::count;
    if (mixed != MixFault::count) {
      ++injected_;
      ++mixed_[static_cast<std::size_t>(mixed)];
    }

    const bool mixed_status = mixed == MixFault::status_503 || mixed == MixFault::status_500;
    if ((fault >= 0 && fault < faults_.fail_first) || mixed_status || failed_upload) {
      if (!mixed_status) ++injected_;
      const unsigned status = mixed == MixFault::status_500   ? 500
                              : mixed == MixFault::status_503 ? 503
                                                              : faults_.fail_status;
      const std::string answer =
          "HTTP/1.1 " + std::to_string(status) + " Injected\r\nContent-Type: " +
          faults_.fail_content_type + "\r\nContent-Length: " +
          std::to_string(faults_.fail_body.size()) + "\r\n\r\n" + faults_.fail_body;
      if (auto [ec, n] = co_await asio::async_write(socket, asio::buffer(answer), use_tuple); ec) {
        co_return;
      }
      continue;
    }
    if (fault >= 0) fault -= faults_.fail_first;

    if (read && faults_.before_read) faults_.before_read(number);
    auto response = co_await forward(std::move(request), upstream_port_);
    if (!response) co_return;
    const std::string header = header_of(*response, head);
    std::string_view body = head ? std::string_view{} : std::string_view(response->body());

    const bool stall = fault >= 0 && fault < faults_.stall_first;
    if (fault >= 0) fault -= faults_.stall_first;
    const bool reset = fault >= 0 && fault < faults_.reset_first;
    if (fault >= 0) fault -= faults_.reset_first;
    const bool truncate = fault >= 0 && fault < faults_.truncate_first;
    if (stall) body = {};
    if (reset || truncate) body = body.substr(0, std::min(body.size(), faults_.cut_after));
    if (stall || reset || truncate) ++injected_;
    if (mixed == MixFault::reset || mixed == MixFault::short_body) body = body.substr(0, body.size() / 2);

    ResponseEnding ending = ResponseEnding::keep_alive;
    if (truncate || mixed == MixFault::short_body) ending = ResponseEnding::close;
    if (reset || mixed == MixFault::reset) ending = ResponseEnding::reset;
    if (stall) ending = ResponseEnding::stall;
    if (mixed == MixFault::stall) {
      // Half the body, a pause, then the rest: a stall the client may sit out or give up on.
      const auto half = body.size() / 2;
      if (!co_await write_response(socket, header, body.substr(0, half), ending)) co_return;
      asio::steady_timer pause(socket.get_executor(), faults_.stall_for);
      co_await pause.async_wait(use_tuple);
      if (!co_await write_response(socket, {}, body.substr(half), ending)) co_return;
      continue;
    }
    if (!co_await write_response(socket, header, body, ending)) co_return;
  }
}

}  // namespace tensorstream::testing
