#pragma once
// A whole small response body as text: listings and object metadata of S3 and GCS.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "storage/http/connection.hpp"
#include "storage/http/failure.hpp"
#include "storage/http/service_adapter.hpp"

namespace tensorstream {

/// A GET of `target` whose 200 response body is read whole, up to `max_size` bytes.
class TextRequest {
 public:
  /// `target` and `host` must outlive the request.
  TextRequest(std::string_view target, std::string_view host, std::size_t max_size,
              std::chrono::milliseconds read_timeout);

  /// What credentials must cover.
  RequestHead head() const { return RequestHead{"GET", target_, host_, {}}; }

  /// Header lines every attempt carries, from ServiceAdapter::authorize.
  void set_credentials(std::string lines) { credentials_ = std::move(lines); }

  /// Sends the request on `connection` and reads the body. A body over the limit is a permanent
  /// failure; a truncated one a transient failure.
  boost::asio::awaitable<std::optional<Failure>> attempt(Connection& connection);

  /// The body once an attempt succeeded.
  std::string& body() { return body_; }

 private:
  std::string_view target_;
  std::string_view host_;
  std::size_t max_size_;
  std::chrono::milliseconds read_timeout_;
  std::string credentials_;
  std::string body_;
};

}  // namespace tensorstream
