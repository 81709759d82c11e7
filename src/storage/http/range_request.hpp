#pragma once
// One byte range of an object, read with `Range` GETs straight into the caller's memory.

#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "storage/http/connection.hpp"
#include "storage/http/failure.hpp"
#include "storage/http/service_adapter.hpp"
#include "storage/response_version.hpp"

namespace tensorstream {

/// The state of reading `destination.size()` bytes at `offset` of the object at `target`.
///
/// Each attempt asks only for the bytes earlier attempts did not deliver, so a body that broke
/// off is resumed, not restarted. Handles 206 (Content-Range checked against the request), a
/// server that ignores Range and sends 200 with the whole object, and chunked bodies.
class RangeRequest {
 public:
  /// `target`, `host` and `destination` must outlive the request; `destination` is not empty.
  RangeRequest(std::string_view target, std::string_view host, std::uint64_t offset,
               std::span<std::byte> destination, std::chrono::milliseconds read_timeout);

  /// What credentials must cover in the next attempt: the Range of the bytes still missing.
  RequestHead head();

  /// Sends the next attempts for `target` to `host`, where a redirect led; both must outlive
  /// the request.
  void aim(std::string_view target, std::string_view host) {
    target_ = target;
    host_ = host;
  }

  /// What the next attempt carries from ServiceAdapter::authorize.
  void set_credentials(Authorization credentials) { credentials_ = std::move(credentials); }

  /// Reads only the version `pinned` of the object: every attempt carries its conditions
  /// (If-Match, If-Unmodified-Since), and a 412 or a response naming another version is a
  /// permanent failure saying the object changed. Without a pin the first response's version is
  /// pinned, so a resumed body never mixes two versions.
  void pin(ResponseVersion pinned) { pinned_ = std::move(pinned); }

  /// The version the responses named (empty if they named none), once an attempt succeeded.
  const ResponseVersion& version() const { return pinned_; }

  /// Requests the missing bytes on `connection` and reads them into the destination. On
  /// success the connection is left reusable if its response was read to the end.
  boost::asio::awaitable<std::optional<Failure>> attempt(Connection& connection);

  /// Adds the bytes of every piece of body that lands in the destination to `landed` as it
  /// arrives (one relaxed addition per read), for progress that moves within a long body.
  void count_into(std::atomic<std::uint64_t>& landed) { landed_ = &landed; }

  /// Bytes of the destination filled so far, from its start.
  std::uint64_t delivered() const { return delivered_; }

  /// Whether the server answered a range request with the whole object.
  bool range_ignored() const { return range_ignored_; }

  /// The size of the whole object, once an attempt succeeded and its response said it (the total
  /// of a 206's Content-Range, the length of a 200).
  std::optional<std::uint64_t> object_size() const { return object_size_; }

 private:
  // The body of a 206 (skip 0) or of a 200 (skip = offset of the first missing byte).
  boost::asio::awaitable<std::optional<Failure>> read_body(Connection& connection,
                                                           HeaderParser& parser,
                                                           std::uint64_t skip);
  boost::asio::awaitable<std::optional<Failure>> read_chunked_body(Connection& connection,
                                                                   HeaderParser& parser,
                                                                   std::uint64_t skip);
  std::optional<Failure> check_partial_response(const HeaderParser& parser) const;
  std::optional<Failure> check_version(const HeaderParser& parser);
  std::uint64_t first() const { return offset_ + delivered_; }
  std::uint64_t last() const { return offset_ + destination_.size() - 1; }
  std::uint64_t missing() const { return destination_.size() - delivered_; }
  void landed(std::uint64_t bytes) {
    delivered_ += bytes;
    if (landed_ != nullptr) landed_->fetch_add(bytes, std::memory_order_relaxed);
  }
  // "bytes a-b": what the current attempt asked for.
  std::string asked() const;
  Failure short_object(std::uint64_t object_size) const;

  std::string_view target_;
  std::string_view host_;
  std::uint64_t offset_;
  std::span<std::byte> destination_;
  std::chrono::milliseconds read_timeout_;
  std::string range_;
  Authorization credentials_;
  ResponseVersion pinned_;
  std::uint64_t delivered_ = 0;
  std::atomic<std::uint64_t>* landed_ = nullptr;
  std::uint64_t attempt_first_ = 0;
  bool range_ignored_ = false;
  std::optional<std::uint64_t> object_size_;
};

}  // namespace tensorstream
