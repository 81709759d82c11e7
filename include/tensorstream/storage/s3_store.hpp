#pragma once
/// @file
/// The s3:// object store: Amazon S3 and S3-compatible stores over SigV4-signed HTTP.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/s3_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Reads objects of one S3 bucket with signed `Range` GETs over pooled keep-alive connections,
/// and writes them with signed PUTs and multipart uploads (create_writer).
///
/// Keys are the URL paths of s3:// URLs: "/prefix/model.safetensors" names the object key
/// "prefix/model.safetensors" of the bucket, and url(key) gives "s3://bucket/prefix/...". Every
/// attempt of every request is signed anew (SigV4, `UNSIGNED-PAYLOAD`), with credentials that are
/// refreshed before they expire, so a long stream outlives temporary credentials.
///
/// S3 errors become exceptions naming the object and the service's code and message:
/// NotFoundError for NoSuchKey and NoSuchBucket; StorageError for AccessDenied,
/// SignatureDoesNotMatch, InvalidAccessKeyId and the rest, which fail at once. SlowDown,
/// InternalError, RequestTimeout, 5xx and network failures are retried with backoff, and a body
/// that broke off resumes after its last byte.
///
/// https trusts the system's CAs, or AWS_CA_BUNDLE when HttpOptions::ca_file is empty.
class TENSORSTREAM_API S3Store final : public ObjectStore {
 public:
  /// @param executor where the store's network I/O runs.
  /// @param bucket an s3:// URL; only its bucket (host) is used.
  /// @param http timeouts, retries, pool size and TLS trust.
  /// @param options region, endpoint, addressing and credentials.
  /// Throws InvalidArgument for another scheme, a malformed endpoint, or a bucket name that
  /// cannot be addressed as asked.
  S3Store(boost::asio::any_io_executor executor, const Url& bucket, HttpOptions http = {},
          S3Options options = {});

  /// Closes the pooled connections. Every operation must have finished.
  ~S3Store() override;

  S3Store(const S3Store&) = delete;
  S3Store& operator=(const S3Store&) = delete;

  /// "s3://bucket" followed by `key`.
  std::string url(const std::string& key) const override;

  /// The object's size, from a HEAD request, whose ETag pins the object.
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;
  /// The size and the ETag the store pinned, with a HEAD request only when no read has told them.
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;

  /// Always true.
  bool can_list() const override { return true; }

  /// The objects under `prefix` with ListObjectsV2, following continuation tokens; one level
  /// deep uses the delimiter '/'. Sorted by key.
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;

  /// The objects and CommonPrefixes directly under `prefix`, from one ListObjectsV2 listing
  /// delimited by '/'.
  boost::asio::awaitable<Listing> list_level(std::string prefix) override;

  /// Reads `destination.size()` bytes at `offset` with one or more signed `Range` GETs, each with
  /// `If-Match` once the object is pinned (see ObjectStore); a 412, or a response with another
  /// ETag from a store that ignores If-Match, is a StorageError saying the object changed.
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;

  /// Always true.
  bool can_write() const override { return true; }

  /// An s3::Writer of `key`: one signed PUT for objects up to options.single_put_limit, a
  /// multipart upload with options.part_size parts, at most options.max_parts_in_flight at a
  /// time, for larger ones; a multipart upload that does not complete is aborted
  /// (AbortMultipartUpload). Requests are retried as reads are. Throws InvalidArgument for a
  /// key that names no object or options out of range.
  std::unique_ptr<ObjectWriter> create_writer(std::string key,
                                              WriteOptions options = {}) override;

  /// Aborts the bucket's unfinished multipart uploads of keys under `prefix` that were
  /// initiated at least `older_than` ago: ListMultipartUploads page by page (key-marker and
  /// upload-id-marker), AbortMultipartUpload for each, signed and retried as other requests;
  /// see ObjectStore::abort_stale_uploads. Needs s3:ListBucketMultipartUploads and
  /// s3:AbortMultipartUpload permissions.
  boost::asio::awaitable<StaleUploads> abort_stale_uploads(
      std::string prefix, std::chrono::system_clock::duration older_than) override;

  /// Requests, payload bytes, retries and connections so far; io_mode "http".
  StoreStats stats() const override;

  /// The endpoint and addressing in use, e.g. "https://models.s3.eu-west-1.amazonaws.com
  /// (virtual-hosted, region eu-west-1)", for logs.
  const std::string& describe() const;

 private:
  struct Impl;  // The endpoint, the HTTP client and the pinned versions.
  std::unique_ptr<Impl> impl_;
};

/// The names of the buckets the credentials of `options` may list (ListBuckets, every page),
/// sorted: what `aws s3 ls` prints without a bucket. Asks the configured endpoint, else
/// `https://s3.REGION.amazonaws.com`. Throws StorageError with S3's code and message when
/// refused (AccessDenied without s3:ListAllMyBuckets), InvalidArgument for a malformed endpoint.
TENSORSTREAM_API
boost::asio::awaitable<std::vector<std::string>> list_s3_buckets(
    boost::asio::any_io_executor executor, HttpOptions http = {}, S3Options options = {});

}  // namespace tensorstream
