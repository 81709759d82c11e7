#pragma once
/// @file
/// The gs:// object store: Google Cloud Storage over its JSON API.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/gcs_options.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Reads objects of one Cloud Storage bucket with `Range` media downloads of the JSON API over
/// pooled keep-alive connections, and writes them with media and resumable uploads.
///
/// Keys are the URL paths of gs:// URLs: "/prefix/model.safetensors" names the object
/// "prefix/model.safetensors" of the bucket, taken literally (no percent-decoding, as gcloud
/// does), and url(key) gives "gs://bucket/prefix/...". Every attempt of every request carries a
/// bearer token that is refreshed before it expires, so a long stream outlives its tokens.
///
/// Errors name the object and the service's message, e.g. "gs://b/m.safetensors: No such object:
/// b/m.safetensors (HTTP 404)": NotFoundError for 404; StorageError for 401, 403 and other 4xx,
/// which fail at once; 408, 429, 5xx and network failures are retried with backoff, and a body
/// that broke off resumes after its last byte. CredentialsError when no token can be had.
class TENSORSTREAM_API GcsStore final : public ObjectStore {
 public:
  /// @param executor where the store's network I/O runs.
  /// @param bucket a gs:// URL; only its bucket (host) is used.
  /// @param http timeouts, retries, pool size and TLS trust.
  /// @param options endpoint and credentials.
  /// Throws InvalidArgument for another scheme or a malformed endpoint.
  GcsStore(boost::asio::any_io_executor executor, const Url& bucket, HttpOptions http = {},
           GcsOptions options = {});

  /// Closes the pooled connections. Every operation must have finished.
  ~GcsStore() override;

  GcsStore(const GcsStore&) = delete;
  GcsStore& operator=(const GcsStore&) = delete;

  /// "gs://bucket" followed by `key`.
  std::string url(const std::string& key) const override;

  /// The object's size, from its metadata, which also pins its generation.
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;
  /// The size and the generation the store pinned, asking for the metadata only when no read
  /// has told them.
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;

  /// Always true.
  bool can_list() const override { return true; }

  /// Always true.
  bool can_write() const override { return true; }

  /// A writer of the object `key` ("/prefix/name"): a media upload for objects of at most
  /// options.single_put_limit bytes, else a resumable upload in chunks of options.part_size
  /// rounded up to a multiple of 256 KiB (at least 256 KiB), sent one at a time. Uploads carry
  /// the bearer token reads do. Throws InvalidArgument naming the object for a prefix or options
  /// out of range.
  std::unique_ptr<ObjectWriter> create_writer(std::string key,
                                              WriteOptions options = {}) override;

  /// The objects under `prefix`, following page tokens; one level deep uses the delimiter '/'.
  /// Sorted by key.
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;

  /// The objects and prefixes directly under `prefix`, from one objects.list listing
  /// delimited by '/'.
  boost::asio::awaitable<Listing> list_level(std::string prefix) override;

  /// Reads `destination.size()` bytes at `offset` with one or more `Range` media downloads, each
  /// with `ifGenerationMatch` once the generation is pinned (by size() or the x-goog-generation
  /// header of the first download); a 412 or another generation is a StorageError saying the
  /// object changed.
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;

  /// Requests, payload bytes, retries and connections so far; io_mode "http".
  StoreStats stats() const override;

  /// The endpoint and credentials in use, e.g. "https://storage.googleapis.com (application
  /// default credentials)", for logs.
  const std::string& describe() const;

 private:
  struct Impl;  // The endpoint, the HTTP client and the pinned versions.
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorstream
