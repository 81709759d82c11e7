#include "storage/http/range_request.hpp"

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <charconv>
#include <cstring>
#include <utility>
#include <vector>

#include "storage/http/content_range.hpp"
#include "storage/http/exchange.hpp"
#include "storage/http/network_failure.hpp"
#include "storage/http/status_failure.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
using beast::http::field;

// Bytes a server that ignores Range sends before the wanted ones are read and dropped in blocks
// of this size.
constexpr std::uint64_t skip_block = 64 * 1024;

void append_number(std::string& text, std::uint64_t value) {
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, value).ptr;
  text.append(digits, end);
}

}  // namespace

RangeRequest::RangeRequest(std::string_view target, std::string_view host, std::uint64_t offset,
                           std::span<std::byte> destination, std::chrono::milliseconds read_timeout)
    : target_(target),
      host_(host),
      offset_(offset),
      destination_(destination),
      read_timeout_(read_timeout) {}

std::string RangeRequest::asked() const {
  return "bytes " + std::to_string(attempt_first_) + "-" + std::to_string(last());
}

Failure RangeRequest::short_object(std::uint64_t object_size) const {
  return permanent_failure("object is " + std::to_string(object_size) + " bytes long; requested " +
                           asked());
}

RequestHead RangeRequest::head() {
  range_ = "bytes=";
  append_number(range_, first());
  range_ += '-';
  append_number(range_, last());
  RequestHead head{"GET", target_, host_, {{"Range", range_}}};
  if (const auto condition = version_condition(pinned_)) head.headers.push_back(*condition);
  return head;
}

asio::awaitable<std::optional<Failure>> RangeRequest::attempt(Connection& connection) {
  attempt_first_ = first();
  begin_request(connection, "GET", target_, credentials_.query, host_);
  std::string& text = connection.request();
  text += "Range: bytes=";
  append_number(text, first());
  text += '-';
  append_number(text, last());
  text += "\r\n";
  text += version_conditions(pinned_);
  text += credentials_.headers;
  text += "\r\n";

  HeaderParser parser;
  if (auto failure = co_await exchange(connection, parser, read_timeout_)) co_return failure;
  const unsigned status = parser.get().result_int();
  if (status == 206) {
    auto failure = check_version(parser);
    if (!failure) failure = check_partial_response(parser);
    if (failure) {
      connection.close();
      co_return failure;
    }
    object_size_ = ContentRange::parse(parser.get()[field::content_range])->total;
    co_return co_await read_body(connection, parser, 0);
  }
  if (status == 200) {
    range_ignored_ = true;
    if (auto failure = check_version(parser)) {
      connection.close();
      co_return failure;
    }
    if (const auto length = parser.content_length()) object_size_ = *length;
    co_return co_await read_body(connection, parser, first());
  }
  const auto range = ContentRange::parse(parser.get()[field::content_range]);
  Failure failure = co_await status_failure(connection, std::move(parser), read_timeout_);
  if (status == 412 && !pinned_.empty()) {
    // Fully explained here; a service adapter's reading of the error body would only obscure it.
    co_return permanent_failure(version_precondition_failed(pinned_));
  }
  if (status == 416 && !pinned_.empty() && pinned_.size && last() < *pinned_.size) {
    co_return permanent_failure(version_range_gone(pinned_, asked()));
  }
  if (status == 416) {
    failure.cause += " (requested " + asked();
    if (range && range->total) {
      failure.cause += " of an object of " + std::to_string(*range->total) + " bytes";
    }
    failure.cause += ")";
  }
  co_return failure;
}

std::optional<Failure> RangeRequest::check_version(const HeaderParser& parser) {
  ResponseVersion seen = version_of(parser.get());
  if (parser.get().result_int() == 206) {
    const auto range = ContentRange::parse(parser.get()[field::content_range]);
    if (range) seen.size = range->total;
  } else if (const auto length = parser.content_length()) {
    seen.size = *length;
  }
  if (pinned_.empty()) {
    pinned_ = seen;
    return std::nullopt;
  }
  if (auto change = version_change(pinned_, seen)) return permanent_failure(std::move(*change));
  return std::nullopt;
}

std::optional<Failure> RangeRequest::check_partial_response(const HeaderParser& parser) const {
  const std::string_view header = parser.get()[field::content_range];
  const auto range = ContentRange::parse(header);
  if (range && range->first == first() && range->last == last()) {
    const auto length = parser.content_length();
    if (!length || *length == missing()) return std::nullopt;
    return permanent_failure("Content-Length " + std::to_string(*length) +
                             " does not match the requested " + asked());
  }
  // A server clips a range that runs past the end of the object.
  if (range && range->first == first() && range->last < last() && range->total &&
      *range->total == *range->last + 1) {
    return short_object(*range->total);
  }
  return permanent_failure("Content-Range '" + std::string(header) +
                           "' does not match the requested " + asked());
}

asio::awaitable<std::optional<Failure>> RangeRequest::read_body(Connection& connection,
                                                                HeaderParser& parser,
                                                                std::uint64_t skip) {
  if (parser.chunked()) co_return co_await read_chunked_body(connection, parser, skip);
  const auto length = parser.content_length();
  const std::uint64_t needed = skip + missing();
  if (length && *length < needed) {
    connection.close();
    co_return short_object(*length);
  }
  const std::uint64_t start = delivered_;
  std::uint64_t skipped = 0;
  const auto progress = [&] { return skipped + (delivered_ - start); };
  auto& buffer = connection.buffer();

  const auto buffered_skip = std::min<std::uint64_t>(buffer.size(), skip);
  buffer.consume(buffered_skip);
  skipped += buffered_skip;
  while (skipped < skip) {
    const auto block = std::min(skip - skipped, skip_block);
    auto [ec, received] = co_await connection.read_some(buffer.prepare(block), read_timeout_);
    skipped += received;
    if (ec) {
      connection.close();
      co_return body_failure(ec, read_timeout_, progress(), needed);
    }
  }

  // Body bytes that came in with the header are copied once; the rest arrives in place.
  const auto buffered = std::min<std::uint64_t>(buffer.size(), missing());
  if (buffered > 0) {
    std::memcpy(destination_.data() + delivered_, buffer.data().data(), buffered);
    buffer.consume(buffered);
    landed(buffered);
  }
  while (delivered_ < destination_.size()) {
    auto [ec, received] = co_await connection.read_some(
        asio::buffer(destination_.data() + delivered_, missing()), read_timeout_);
    landed(received);
    if (ec) {
      connection.close();
      co_return body_failure(ec, read_timeout_, progress(), needed);
    }
  }

  // Draining the rest of a whole object could cost far more than a new connection.
  if (length && *length == needed) {
    connection.set_reusable(parser.keep_alive());
  } else {
    connection.close();
  }
  co_return std::nullopt;
}

asio::awaitable<std::optional<Failure>> RangeRequest::read_chunked_body(Connection& connection,
                                                                        HeaderParser& parser,
                                                                        std::uint64_t skip) {
  const bool whole_object = parser.get().result_int() == 200;
  const std::uint64_t needed = skip + missing();
  const std::uint64_t start = delivered_;
  std::uint64_t skipped = 0;
  const auto progress = [&] { return skipped + (delivered_ - start); };
  std::vector<std::byte> scratch(std::min(skip, skip_block));

  BufferParser reader(std::move(parser));
  reader.body_limit(boost::none);
  auto& body = reader.get().body();
  while (!reader.is_done()) {
    std::size_t offered = 0;
    if (skipped < skip) {
      body.data = scratch.data();
      offered = std::min<std::uint64_t>(scratch.size(), skip - skipped);
    } else if (delivered_ < destination_.size()) {
      body.data = destination_.data() + delivered_;
      offered = missing();
    } else if (whole_object) {
      break;
    } else {
      // Nowhere to put more body: the parser reports need_buffer if any arrives.
      body.data = nullptr;
    }
    body.size = offered;
    body.more = true;
    const bool skipping = skipped < skip;
    const auto ec = co_await connection.read_some(reader, read_timeout_);
    if (skipping) {
      skipped += offered - body.size;
    } else {
      landed(offered - body.size);
    }
    if (ec == beast::http::error::need_buffer) {
      if (offered > 0) continue;
      connection.close();
      co_return permanent_failure("chunked body is longer than the requested " + asked());
    }
    if (ec) {
      connection.close();
      co_return body_failure(ec, read_timeout_, progress(), needed);
    }
  }

  if (delivered_ < destination_.size()) {
    connection.close();
    if (whole_object) co_return short_object(progress());
    co_return transient_failure("truncated body: chunked body ended after " +
                                std::to_string(progress()) + " of " + std::to_string(needed) +
                                " bytes");
  }
  if (reader.is_done()) {
    connection.set_reusable(reader.keep_alive());
  } else {
    connection.close();
  }
  co_return std::nullopt;
}

}  // namespace tensorstream
