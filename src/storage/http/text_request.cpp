#include "storage/http/text_request.hpp"

#include <boost/beast/http/error.hpp>
#include <algorithm>
#include <utility>

#include "storage/http/exchange.hpp"
#include "storage/http/network_failure.hpp"
#include "storage/http/status_failure.hpp"

namespace tensorstream {

TextRequest::TextRequest(std::string_view target, std::string_view host, std::size_t max_size,
                         std::chrono::milliseconds read_timeout, RequestBody body)
    : target_(target),
      host_(host),
      max_size_(max_size),
      read_timeout_(read_timeout),
      body_(body) {}

RequestHead TextRequest::head() {
  RequestHead head{body_.method, target_, host_, {}, body_.sha256};
  if (body_.method != "GET") {
    content_length_ = std::to_string(body_.bytes.size());
    head.headers.emplace_back("Content-Length", content_length_);
  }
  std::string_view lines = body_.headers;
  while (!lines.empty()) {
    const auto end = lines.find("\r\n");
    const std::string_view line = lines.substr(0, end);
    lines = end == std::string_view::npos ? std::string_view{} : lines.substr(end + 2);
    const auto colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    head.headers.emplace_back(line.substr(0, colon), value);
  }
  return head;
}

boost::asio::awaitable<std::optional<Failure>> TextRequest::attempt(Connection& connection) {
  begin_request(connection, body_.method, target_, credentials_.query, host_);
  std::string& text = connection.request();
  if (body_.method != "GET") {
    text += "Content-Length: " + std::to_string(body_.bytes.size()) + "\r\n";
  }
  text += body_.headers;
  text += credentials_.headers;
  text += "\r\n";

  // The client sets the watch before every attempt: the longer wait stays with this request.
  if (const auto& watch = connection.response_watch(); watch && body_.response_timeout_factor > 1) {
    auto longer = *watch;
    longer.timeout *= body_.response_timeout_factor;
    connection.watch_responses(longer);
  }
  HeaderParser parser;
  if (auto failure = co_await exchange(connection, parser, read_timeout_, body_.bytes)) {
    co_return failure;
  }
  const unsigned status = parser.get().result_int();
  if (status != 200 && status != 204 &&
      std::find(body_.also_accepted.begin(), body_.also_accepted.end(), status) ==
          body_.also_accepted.end()) {
    co_return co_await status_failure(connection, std::move(parser), read_timeout_);
  }
  const auto length = parser.content_length();
  if (length && *length > max_size_) {
    connection.close();
    co_return permanent_failure("response of " + std::to_string(*length) +
                                " bytes is larger than the " + std::to_string(max_size_) +
                                " accepted");
  }
  TextParser reader(std::move(parser));
  reader.body_limit(max_size_);
  if (const auto ec = co_await connection.read(reader, read_timeout_)) {
    connection.close();
    if (ec == boost::beast::http::error::body_limit) {
      co_return permanent_failure("response is larger than the " + std::to_string(max_size_) +
                                  " bytes accepted");
    }
    co_return body_failure(ec, read_timeout_, reader.get().body().size(), length.value_or(0));
  }
  connection.set_reusable(reader.keep_alive());
  response_.body = std::move(reader.get().body());
  const auto& head = reader.get();
  response_.etag = std::string(head[boost::beast::http::field::etag]);
  response_.status = status;
  response_.location = std::string(head[boost::beast::http::field::location]);
  response_.range = std::string(head[boost::beast::http::field::range]);
  response_.link = std::string(head[boost::beast::http::field::link]);
  co_return std::nullopt;
}

boost::asio::awaitable<void> TextRequest::prepare_repeat() {
  if (!body_.before_repeat) co_return;
  auto before_repeat = body_.before_repeat;
  body_ = co_await before_repeat();
  // The replacement decides the repeats after it too.
  if (!body_.before_repeat) body_.before_repeat = std::move(before_repeat);
}

}  // namespace tensorstream
