#include "storage/http/head_request.hpp"

#include <utility>

#include "storage/http/exchange.hpp"
#include "storage/http/status_failure.hpp"

namespace tensorstream {

HeadRequest::HeadRequest(std::string_view target, std::string_view host,
                         std::chrono::milliseconds read_timeout)
    : target_(target), host_(host), read_timeout_(read_timeout) {}

boost::asio::awaitable<std::optional<Failure>> HeadRequest::attempt(Connection& connection) {
  begin_request(connection, "HEAD", target_, credentials_.query, host_);
  std::string& text = connection.request();
  text += credentials_.headers;
  text += "\r\n";

  HeaderParser parser;
  // A HEAD response announces a body it does not carry.
  parser.skip(true);
  if (auto failure = co_await exchange(connection, parser, read_timeout_)) co_return failure;
  if (parser.get().result_int() != 200) {
    co_return co_await status_failure(connection, std::move(parser), read_timeout_);
  }
  connection.set_reusable(parser.keep_alive());
  const auto length = parser.content_length();
  if (!length) co_return permanent_failure("HEAD response has no Content-Length");
  size_ = *length;
  version_ = version_of(parser.get());
  version_.size = size_;
  co_return std::nullopt;
}

}  // namespace tensorstream
