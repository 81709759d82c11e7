#pragma once
/// @file
/// The http:// and https:// object store: byte ranges from any HTTP/1.1 server.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Reads objects from one HTTP or HTTPS server with `Range` requests over pooled keep-alive
/// connections.
///
/// Keys are URL paths as they go on the wire (already percent-encoded), e.g.
/// "/models/a.safetensors"; a query string may follow. The query of the URL the store is opened
/// with (a presigned URL's signature, a SAS token) goes with the request of every key that has
/// none of its own, and is never shown: url() and every message and log line show it as `?…`.
/// Bodies are read straight into the
/// destination. Transient failures (resets, timeouts, truncated bodies, 408, 429, 5xx) are retried
/// with jittered exponential backoff, resuming after the last byte received. A server that
/// ignores `Range` is read correctly, at the cost of transferring the skipped prefix. Redirects
/// are followed (HttpOptions::max_redirects, never from https to http) and the final location of
/// each key remembered, so that its range reads go there directly; connections go through the
/// proxies of HttpOptions::proxies or the environment.
/// Terminal cancellation of the calling coroutine abandons the request (its connection is
/// closed) and throws boost::system::system_error with asio::error::operation_aborted.
class TENSORSTREAM_API HttpStore final : public ObjectStore {
 public:
  /// @param executor where the store's network I/O runs; its io_context may be run by several
  ///        threads.
  /// @param origin an http or https URL; its scheme, host and port, and its query for every
  ///        request.
  /// @param options timeouts, retries, pool size and TLS trust.
  /// Throws InvalidArgument for another scheme or a CA file that cannot be loaded.
  HttpStore(boost::asio::any_io_executor executor, Url origin, HttpOptions options = {});

  /// Closes the pooled connections. Every operation must have finished.
  ~HttpStore() override;

  HttpStore(const HttpStore&) = delete;
  HttpStore& operator=(const HttpStore&) = delete;

  /// The origin followed by `key`, any query shown as `?…`.
  std::string url(const std::string& key) const override;

  /// The object's Content-Length, from a HEAD request, whose ETag or Last-Modified pins it.
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;
  /// The size and the ETag (else Last-Modified) the store pinned, with a HEAD request only
  /// when no read has told them.
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;

  /// Always false: HTTP has no listing.
  bool can_list() const override { return false; }

  /// Throws InvalidArgument: HTTP servers cannot list objects.
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;

  /// Reads `destination.size()` bytes at `offset` with one or more `Range` GETs, each with
  /// `If-Match` (or `If-Unmodified-Since`) once the object is pinned (see ObjectStore); a 412, or
  /// a response with another ETag from a server that ignores If-Match, is a StorageError saying
  /// the object changed. Throws InvalidArgument for a key that does not start with '/' or holds
  /// unencoded spaces.
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;

  /// Requests, payload bytes, retries and connections so far; io_mode "http".
  StoreStats stats() const override;

 private:
  struct Impl;  // The endpoint, the HTTP client and the pinned versions.
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorstream
