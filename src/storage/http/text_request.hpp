#pragma once
// A request answered with a small text body: listings and object metadata of S3 and GCS, and
// S3's uploads, whose answers are short XML documents.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "storage/http/connection.hpp"
#include "storage/http/failure.hpp"
#include "storage/http/service_adapter.hpp"

namespace tensorstream {

/// The method and body of a request, and how it is answered; a GET without body by default.
struct RequestBody {
  std::string_view method = "GET";
  std::span<const std::byte> bytes{};  ///< Sent with a Content-Length (none for a GET).
  std::string_view sha256{};           ///< Lowercase hex SHA-256 of `bytes`, when signed.
  /// More header lines ("Name: value\r\n" each), e.g. GCS's Content-Range of an upload chunk.
  std::string_view headers{};
  /// Statuses that answer the request as 200 and 204 do, e.g. GCS's 308 Resume Incomplete.
  std::span<const unsigned> also_accepted{};
  /// Gives the request to send instead of this one when it is repeated after a failure, e.g.
  /// the rest of a GCS upload chunk once the server said how much of it it kept. Null: the
  /// same request is sent again. What the result points to must outlive the request.
  std::function<boost::asio::awaitable<RequestBody>()> before_repeat{};
  /// The response header may take this many times the client's response timeout: for requests
  /// a store may work on for long before it answers, such as completing an upload.
  unsigned response_timeout_factor = 1;
};

/// The answer to a TextRequest.
struct TextResponse {
  std::string body;
  std::string etag;      ///< The ETag header, as sent (quoted); empty when there is none.
  unsigned status = 0;   ///< 200, 204 or one of RequestBody::also_accepted.
  std::string location;  ///< The Location header; empty when there is none.
  std::string range;     ///< The Range header (GCS's bytes persisted); empty when there is none.
  std::string link;      ///< The Link header (the Hub's next page); empty when there is none.
};

/// A request of `target` whose 200 (or 204) response body is read whole, up to `max_size`
/// bytes.
class TextRequest {
 public:
  /// `target`, `host` and what `body` points to must outlive the request.
  TextRequest(std::string_view target, std::string_view host, std::size_t max_size,
              std::chrono::milliseconds read_timeout, RequestBody body = {});

  /// What credentials must cover: the method, target, Content-Length (but for a GET) and the
  /// header lines of the body.
  RequestHead head();

  /// What every attempt carries from ServiceAdapter::authorize.
  void set_credentials(Authorization credentials) { credentials_ = std::move(credentials); }

  /// Sends the request on `connection` and reads the response. A response body over the limit
  /// is a permanent failure; a truncated one a transient failure.
  boost::asio::awaitable<std::optional<Failure>> attempt(Connection& connection);

  /// Replaces the request by what RequestBody::before_repeat gives, if set; called before every
  /// repeat of the request.
  boost::asio::awaitable<void> prepare_repeat();

  /// The response once an attempt succeeded.
  TextResponse& response() { return response_; }

 private:
  std::string_view target_;
  std::string_view host_;
  std::size_t max_size_;
  std::chrono::milliseconds read_timeout_;
  RequestBody body_;
  Authorization credentials_;
  std::string content_length_;
  TextResponse response_;
};

}  // namespace tensorstream
