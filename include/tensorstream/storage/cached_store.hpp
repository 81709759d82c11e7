#pragma once
/// @file
/// The local cache tier: a store that keeps what another store reads in a directory on the
/// node, so that the next load of the same object version reads it from disk.

#include <boost/asio/any_io_executor.hpp>
#include <atomic>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/cache_options.hpp"
#include "tensorstream/storage/object_store.hpp"

namespace tensorstream {

class StoreOptions;

namespace detail {
class CacheEntry;
}

/// A cache as options and the environment give it, all members decided.
struct ResolvedCache {
  std::string directory;
  CacheMode mode = CacheMode::readwrite;
  std::optional<std::uint64_t> max_size;  ///< nullopt: no bound.
  /// Copies of fetched bytes waiting to be written to the cache, at most (see CachedStore);
  /// 0 has each read write its bytes before it completes.
  std::uint64_t write_behind = std::uint64_t{256} << 20;
  CacheFloor min_free = CacheFloor::standard();  ///< What stays free on its file system.
};

/// The cache `options` ask for (their CacheOptions, else `TENSORSTREAM_CACHE_DIR`,
/// `TENSORSTREAM_CACHE_SIZE`, `TENSORSTREAM_CACHE_MODE`); nullopt when there is none or its
/// mode is off; `TENSORSTREAM_CACHE_MIN_FREE` where the options set no floor.
/// @throws InvalidArgument naming the variable for a malformed value.
TENSORSTREAM_API std::optional<ResolvedCache> resolve_cache(const StoreOptions& options);

/// Reads through `source` and keeps what it read under a cache directory (see CacheOptions).
///
/// - **Entries by object and version.** The first access to an object asks `source` for its
///   size and version (ObjectStore::stat: one request, pinning that version as the source
///   does); the entry of that object (ObjectStore::object_identity) and version
///   (ObjectVersion::cache_key) holds its bytes. A changed object gets a new entry; an object
///   whose source reports no version is not cached.
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
/// - **Never the reason a read fails.** Online, every failure of the cache (a full or read-only
///   disk, a short or failing read of its files, a damaged journal) is a warning naming the cache
///   and its cause, and the bytes come from the source. A cache that cannot be written is used
///   read-only for the rest of the process, one that cannot be read is passed by.
/// - **Room.** The entries take at most ResolvedCache::max_size together, and the file system
///   keeps ResolvedCache::min_free: least recently used entries no process uses are removed to
///   make room for a new one; an object that still does not fit is streamed without being kept,
///   and fills that would pass the floor stop (warned once).
/// - **Unsettled versions.** An entry made while its version could not tell a same-second
///   rewrite apart (ObjectVersion::settled) is not read online: the next stream makes it anew.
///
/// Listings pass through to the source and are kept for offline use, as are the sizes of the
/// objects a stream found without a listing (an http(s):// model's index). Writes pass through.
class TENSORSTREAM_API CachedStore : public ObjectStore {
 public:
  /// @throws StorageError naming the directory when it cannot be created.
  CachedStore(std::unique_ptr<ObjectStore> source, ResolvedCache cache,
              boost::asio::any_io_executor executor);
  /// Records what was written and not yet recorded, then closes every entry.
  ~CachedStore() override;

  std::string url(const std::string& key) const override;
  std::string object_identity(const std::string& key) const override;
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
  // The entry of `key`, opened at its first read; null where the object is not cached.
  boost::asio::awaitable<std::shared_ptr<detail::CacheEntry>> entry_of(const std::string& key);
  // Keeps `text` as the listing `file` for offline use, where the cache is written.
  boost::asio::awaitable<void> save_listing(std::filesystem::path file, std::string text);
  // A read of `key`'s entry failed with `error`: online, warns and reads `key` from the source
  // from now on (true); offline, throws it.
  bool passed_by(const std::string& key, std::exception_ptr error);

  std::unique_ptr<ObjectStore> source_;
  std::shared_ptr<State> state_;
};

}  // namespace tensorstream
