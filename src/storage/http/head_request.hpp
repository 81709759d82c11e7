#pragma once
// The size of an object, from the Content-Length of a HEAD response.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "storage/http/connection.hpp"
#include "storage/http/failure.hpp"
#include "storage/http/service_adapter.hpp"
#include "storage/response_version.hpp"

namespace tensorstream {

/// A HEAD request for the object at `target`.
class HeadRequest {
 public:
  /// `target` and `host` must outlive the request.
  HeadRequest(std::string_view target, std::string_view host,
              std::chrono::milliseconds read_timeout);

  /// What credentials must cover.
  RequestHead head() const { return RequestHead{"HEAD", target_, host_, {}}; }

  /// Sends the next attempts for `target` to `host`, where a redirect led; both must outlive
  /// the request.
  void aim(std::string_view target, std::string_view host) {
    target_ = target;
    host_ = host;
  }

  /// What every attempt carries from ServiceAdapter::authorize.
  void set_credentials(Authorization credentials) { credentials_ = std::move(credentials); }

  /// Sends the request on `connection` and takes the size from the response.
  boost::asio::awaitable<std::optional<Failure>> attempt(Connection& connection);

  /// The object's size once an attempt succeeded.
  std::uint64_t size() const { return size_; }

  /// The version the response named (empty if it named none), once an attempt succeeded.
  const ResponseVersion& version() const { return version_; }

 private:
  std::string_view target_;
  std::string_view host_;
  std::chrono::milliseconds read_timeout_;
  Authorization credentials_;
  std::uint64_t size_ = 0;
  ResponseVersion version_;
};

}  // namespace tensorstream
