#include "storage/http/text_request.hpp"

#include <boost/beast/http/error.hpp>
#include <utility>

#include "storage/http/exchange.hpp"
#include "storage/http/network_failure.hpp"
#include "storage/http/status_failure.hpp"

namespace tensorstream {

TextRequest::TextRequest(std::string_view target, std::string_view host, std::size_t max_size,
                         std::chrono::milliseconds read_timeout)
    : target_(target), host_(host), max_size_(max_size), read_timeout_(read_timeout) {}

boost::asio::awaitable<std::optional<Failure>> TextRequest::attempt(Connection& connection) {
  std::string& text = connection.request();
  begin_request(text, "GET", target_, host_);
  text += credentials_;
  text += "\r\n";

  HeaderParser parser;
  if (auto failure = co_await exchange(connection, parser, read_timeout_)) co_return failure;
  if (parser.get().result_int() != 200) {
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
  body_ = std::move(reader.get().body());
  co_return std::nullopt;
}

}  // namespace tensorstream
