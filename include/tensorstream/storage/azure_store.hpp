#pragma once
/// @file
/// The az:// object store: Azure Blob Storage over its REST API.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/azure_options.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Reads blobs of one Azure Blob Storage container with ranged Get Blob requests over pooled
/// keep-alive connections, and writes block blobs.
///
/// Keys are the URL paths of az:// URLs: "/prefix/model.safetensors" names the blob
/// "prefix/model.safetensors" of the container, taken literally, and url(key) gives
/// "az://container/prefix/...". Every attempt of every request is authorized anew: signed with
/// Shared Key, or carrying a SAS token or an Entra ID bearer token that is refreshed before it
/// expires.
///
/// Errors name the blob and the service's message, e.g. "az://c/m.safetensors: BlobNotFound: The
/// specified blob does not exist. (HTTP 404)": NotFoundError for 404; StorageError for 401, 403
/// and other 4xx, which fail at once; 408, 429, 5xx, ServerBusy, OperationTimedOut and network
/// failures are retried with backoff, and a body that broke off resumes after its last byte.
/// CredentialsError when no credentials can be had.
class TENSORSTREAM_API AzureStore final : public ObjectStore {
 public:
  /// @param executor where the store's network I/O runs.
  /// @param container an az:// URL; only its container (host) is used.
  /// @param http timeouts, retries, pool size and TLS trust.
  /// @param options account, endpoint and credentials.
  /// Throws InvalidArgument for another scheme, a malformed endpoint or connection string, or
  /// when no account can be found.
  AzureStore(boost::asio::any_io_executor executor, const Url& container, HttpOptions http = {},
             AzureOptions options = {});
  /// Closes the pooled connections. Every operation must have finished.
  ~AzureStore() override;
  AzureStore(const AzureStore&) = delete;
  AzureStore& operator=(const AzureStore&) = delete;

  /// "az://container" followed by `key`.
  std::string url(const std::string& key) const override;
  /// The blob's address on its endpoint, which names the storage account an az:// URL leaves
  /// out: two accounts' blobs of one container and name are two objects to a cache.
  std::string object_identity(const std::string& key) const override;
  /// The blob's size, from Get Blob Properties, which also pins its ETag.
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;
  /// The size and the ETag the store pinned, asking for the properties only when no read has
  /// told them.
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;
  /// Always true.
  bool can_list() const override { return true; }
  /// Always true.
  bool can_write() const override { return true; }

  /// 64 MiB: each Get Blob costs the service fixed work (Azurite measurably so: 16 MiB ranges
  /// reach 0.82 of 32 whole-range readers, 64 MiB ranges 1.09), so streams read four default
  /// chunks per request unless told otherwise.
  std::uint64_t preferred_read_size() const override { return std::uint64_t{64} << 20; }
  /// A writer of the block blob `key` ("/prefix/name"): one Put Blob for objects of at most
  /// options.single_put_limit bytes, else Put Block of options.part_size bytes, at most
  /// options.max_parts_in_flight at a time, and Put Block List at commit. Until then nothing is
  /// visible under the name; blocks of an upload that fails or is abandoned are never committed
  /// and expire on their own. Throws InvalidArgument naming the blob for a prefix or options out
  /// of range.
  std::unique_ptr<ObjectWriter> create_writer(std::string key,
                                              WriteOptions options = {}) override;
  /// The blobs under `prefix`, following List Blobs markers; one level deep uses the delimiter
  /// '/'. Sorted by key.
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;
  /// The blobs and prefixes directly under `prefix`, from one List Blobs listing delimited by
  /// '/'.
  boost::asio::awaitable<Listing> list_level(std::string prefix) override;
  /// Reads `destination.size()` bytes at `offset` with one or more ranged Get Blob requests,
  /// each with If-Match once the ETag is pinned (by size() or the first read); a 412 or another
  /// ETag is a StorageError saying the blob changed.
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;
  /// Counters of the HTTP client, io_mode "http" or "https".
  StoreStats stats() const override;
  /// The endpoint, account and credentials, e.g. "http://127.0.0.1:10000/devstoreaccount1
  /// (account devstoreaccount1, credentials: connection string)".
  const std::string& describe() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorstream
