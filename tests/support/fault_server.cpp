#include "support/fault_server.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/read.hpp>
#include <charconv>
#include <chrono>
#include <exception>
#include <optional>
#include <string_view>

#include "support/byte_range.hpp"
#include "support/response_ending.hpp"
#include "support/use_tuple.hpp"

namespace tensorstream::testing {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using asio::ip::tcp;


std::string chunked(std::string_view body, std::size_t chunk_size) {
  std::string text;
  for (std::size_t at = 0; at < body.size(); at += chunk_size) {
    const auto piece = body.substr(at, chunk_size);
    char digits[20];
    const auto end = std::to_chars(digits, digits + sizeof digits, piece.size(), 16).ptr;
    text.append(digits, end);
    text += "\r\n";
    text += piece;
    text += "\r\n";
  }
  return text + "0\r\n\r\n";
}

}  // namespace

FaultServer::FaultServer(std::string path, std::string object, Behaviour behaviour)
    : path_(std::move(path)),
      object_(std::move(object)),
      behaviour_(behaviour),
      listener_([this](tcp::socket socket) { return serve(std::move(socket)); }) {}

std::string FaultServer::base_url() const {
  return "http://127.0.0.1:" + std::to_string(listener_.port());
}

std::vector<std::string> FaultServer::ranges() const {
  std::lock_guard lock(mutex_);
  return ranges_;
}

asio::awaitable<void> FaultServer::serve(tcp::socket socket) {
  ++connections_;
  boost::beast::flat_buffer buffer;
  for (;;) {
    http::request<http::empty_body> request;
    if (auto [ec, n] = co_await http::async_read(socket, buffer, request, use_tuple); ec) co_return;
    const int index = requests_++;
    const std::string range_header(request[http::field::range]);
    {
      std::lock_guard lock(mutex_);
      ranges_.push_back(range_header);
    }
    if (behaviour_.silent_from_request >= 0 && index >= behaviour_.silent_from_request) {
      // Until the client gives up and closes the connection.
      co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
      co_return;
    }

    std::string status = "200 OK";
    std::string headers;
    std::string_view body = object_;
    std::string text_body;
    if (request.target() != path_) {
      status = "404 Not Found";
      text_body = "no such object\n";
    } else if (index < behaviour_.fail_first ||
               (!behaviour_.fail_range.empty() && range_header == behaviour_.fail_range)) {
      status = std::to_string(behaviour_.fail_status) + " Injected Failure";
      text_body = "injected failure\n";
    } else if (const auto range = parse_range(range_header, object_.size());
               range && behaviour_.honour_range) {
      if (range->first >= object_.size()) {
        status = "416 Range Not Satisfiable";
        headers = "Content-Range: bytes */" + std::to_string(object_.size()) + "\r\n";
        body = {};
      } else {
        const std::uint64_t shift = behaviour_.wrong_content_range ? 1 : 0;
        status = "206 Partial Content";
        headers = "Content-Range: bytes " + std::to_string(range->first + shift) + "-" +
                  std::to_string(range->last + shift) + "/" + std::to_string(object_.size()) +
                  "\r\n";
        body = body.substr(range->first, range->last - range->first + 1);
      }
    }
    if (!text_body.empty()) {
      body = text_body;
      headers += "Content-Type: text/plain\r\n";
    } else {
      headers += "Content-Type: application/octet-stream\r\n";
    }
    const bool chunk = behaviour_.chunked && text_body.empty();
    headers += chunk ? "Transfer-Encoding: chunked\r\n"
                     : "Content-Length: " + std::to_string(body.size()) + "\r\n";
    const std::string header = "HTTP/1.1 " + status + "\r\n" + headers + "\r\n";

    const bool truncate = index < behaviour_.truncate_first;
    const bool reset = index < behaviour_.reset_first;
    std::string encoded;
    if (chunk && !body.empty()) {
      encoded = chunked(body, behaviour_.chunk_size);
      body = encoded;
    } else if (chunk) {
      body = "0\r\n\r\n";
    }
    const bool stall =
        (behaviour_.stall || (behaviour_.stall_from_request >= 0 &&
                              index >= behaviour_.stall_from_request)) &&
        text_body.empty();
    const bool head_body = behaviour_.body_on_head_error && !text_body.empty();
    if ((request.method() == http::verb::head && !head_body) || stall) body = {};
    if (truncate || reset) body = body.substr(0, std::min(body.size(), behaviour_.truncate_after));
    ResponseEnding ending = ResponseEnding::keep_alive;
    if (truncate || behaviour_.close_after_response) ending = ResponseEnding::close;
    if (reset) ending = ResponseEnding::reset;
    if (stall) ending = ResponseEnding::stall;
    std::string_view head = header;
    if (!behaviour_.pause_range.empty() && range_header == behaviour_.pause_range &&
        text_body.empty()) {
      const auto sent = std::min(body.size(), behaviour_.pause_after);
      if (!co_await write_response(socket, head, body.substr(0, sent), ResponseEnding::keep_alive)) {
        co_return;
      }
      asio::steady_timer timer(socket.get_executor());
      while (!resumed_) {
        timer.expires_after(std::chrono::milliseconds(5));
        co_await timer.async_wait(use_tuple);
      }
      head = {};
      body = body.substr(sent);
    }
    if (!co_await write_response(socket, head, body, ending)) co_return;
  }
}

}  // namespace tensorstream::testing
