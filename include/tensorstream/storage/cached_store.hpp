#pragma once
/// @file
/// The local cache tier: a store that keeps what another store reads in a directory on the
/// node, so that the next load of the same object version reads it from disk.

#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/cache_options.hpp"
#include "tensorstream/storage/object_store.hpp"

namespace tensorstream {

class StoreOptions;

/// A cache as options and the environment give it, all members decided.
struct ResolvedCache {
  std::string directory;
  CacheMode mode = CacheMode::readwrite;
  std::optional<std::uint64_t> max_size;  ///< nullopt: no bound.
  /// Copies of fetched bytes waiting to be written to the cache, at most (see CachedStore);
  /// 0 has each read write its bytes before it completes.
  std::uint64_t write_behind = std::uint64_t{256} << 20;
};

/// The cache `options` ask for (their CacheOptions, else `TENSORSTREAM_CACHE_DIR`,
/// `TENSORSTREAM_CACHE_SIZE`, `TENSORSTREAM_CACHE_MODE`); nullopt when there is none or its
/// mode is off. @throws InvalidArgument naming the variable for a malformed value.
TENSORSTREAM_API std::optional<ResolvedCache> resolve_cache(const StoreOptions& options);

/// Reads through `source` and keeps what it read under a cache directory (see CacheOptions).
///
/// - **Entries by object and version.** The first access to an object asks `source` for its
///   size and version (ObjectStore::stat: one request, pinning that version as the source
///   does); the entry of that URL and version holds its bytes. A changed object gets a new
///   entry; an object whose source reports no version is not cached.
/// - **Partial entries.** An entry records the ranges it holds. read_range() reads those from
///   disk and fetches the rest from the source, keeping it (CacheMode::readwrite): a stream of
///   some tensors caches those, and a later full stream fetches only the others.
/// - **Integrity.** A range counts as held only once its bytes are durable (fdatasync) and
///   recorded with their XXH3-64 hash; each cached read checks the hash of the ranges it
///   reads. Bytes that fail it are dropped with a warning and fetched again.
/// - **Several processes.** Entries are shared by every process using the directory. A range
///   one process is filling is not written by another (which reads it from the source), and
///   no range is read before it is recorded. Entries in use are never evicted.
/// - **Write-through.** Bytes from the source land in the caller's destination; a copy of them
///   (in reused buffers of at most ResolvedCache::write_behind bytes in all) is written to the
///   entry later by the cache's writer threads, so that a read completes without waiting for the
///   disk. Past that bound a read writes its bytes from the destination before it completes: the
///   stream slows to the disk's pace instead of holding more memory. Recording happens later
///   still, on a thread of its own. No second request.
/// - **Offline.** CacheMode::offline asks the source nothing: sizes, listings and bytes come
///   from the cache's most recently used entry of each object; what it lacks is an error that
///   says so.
///
/// Listings pass through to the source and are kept for offline use. Writes pass through.
class TENSORSTREAM_API CachedStore : public ObjectStore {
 public:
  /// @throws StorageError naming the directory when it cannot be created.
  CachedStore(std::unique_ptr<ObjectStore> source, ResolvedCache cache,
              boost::asio::any_io_executor executor);
  /// Records what was written and not yet recorded, then closes every entry.
  ~CachedStore() override;

  std::string url(const std::string& key) const override;
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;
  bool can_list() const override;
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;
  boost::asio::awaitable<Listing> list_level(std::string prefix) override;
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;
  /// The alignment of direct reads where the object's entry is read past the page cache (it
  /// was mostly not cached when opened), else the source's for an object not cached.
  std::size_t memory_alignment(const std::string& key) override;
  std::uint64_t preferred_read_size() const override;
  bool can_write() const override;
  std::unique_ptr<ObjectWriter> create_writer(std::string key, WriteOptions options) override;
  boost::asio::awaitable<StaleUploads> abort_stale_uploads(
      std::string prefix, std::chrono::system_clock::duration older_than) override;
  /// The source's counters, with the bytes read from the cache added to `bytes` and counted in
  /// `cached_bytes` (those read with direct I/O also in `direct_bytes`); `io_mode` is the
  /// source's followed by " + cache".
  StoreStats stats() const override;

  /// The store it reads through.
  ObjectStore& source() { return *source_; }

 private:
  struct State;
  std::unique_ptr<ObjectStore> source_;
  std::shared_ptr<State> state_;
};

}  // namespace tensorstream
