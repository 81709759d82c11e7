#pragma once
/// @file
/// Looking after a cache directory (see CachedStore): what it holds, checking it, removing from
/// it. Safe while streams use the directory: entries in use are reported and left alone.

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/cache_options.hpp"
#include "tensorstream/storage/object_version.hpp"

namespace tensorstream {

/// One entry of a cache directory: one version of one object.
struct CacheEntryStatus {
  std::string url;               ///< The object, as streams name it.
  /// Which version of it (ObjectStat::version); empty for an entry of an earlier build, which
  /// no stream opens and eviction removes in its turn.
  ObjectVersion version;
  std::uint64_t size = 0;        ///< The object's size.
  std::uint64_t cached_bytes = 0;///< Of those, the bytes the entry holds.
  std::uint64_t disk_bytes = 0;  ///< Blocks its files take.
  std::chrono::system_clock::time_point last_used;  ///< When a stream last opened it.
  bool in_use = false;           ///< Whether a process has it open now.
  std::string directory;         ///< Where it is.
};

/// The room around a cache directory, as `tensorstream cache du` reports it.
struct CacheSpace {
  std::uint64_t filesystem_bytes = 0;  ///< The size of the file system that holds it.
  std::uint64_t free_bytes = 0;        ///< Free on it for unprivileged writers.
  std::uint64_t min_free_bytes = 0;    ///< What the cache keeps free there (CacheFloor).
  std::uint64_t pending_bytes = 0;     ///< Taken by entries being made or removed (tmp/).
};

/// The room around the cache `directory` under `floor`. @throws StorageError naming the
/// directory when its file system cannot say.
TENSORSTREAM_API CacheSpace cache_space(const std::string& directory, const CacheFloor& floor);

/// Every entry under the cache `directory`, by URL, then most recently used first. A missing
/// directory holds none.
TENSORSTREAM_API std::vector<CacheEntryStatus> list_cache(const std::string& directory);

/// What verify_cache() found in one entry.
struct CacheCheck {
  CacheEntryStatus entry;           ///< The entry, as before the check.
  std::uint64_t checked_bytes = 0;  ///< Bytes whose hash was checked.
  std::uint64_t damaged_bytes = 0;  ///< Of those, bytes in ranges that failed and were dropped.
  std::size_t damaged_ranges = 0;   ///< Ranges that failed.
};

/// Checks every recorded range of every entry against its hash, dropping those that fail (the
/// next stream fetches them again). @throws StorageError when a data file cannot be read.
TENSORSTREAM_API std::vector<CacheCheck> verify_cache(const std::string& directory);

/// Removes the entries no process uses that were last used more than `older_than` ago (all of
/// them for zero), and what killed processes left half made or half removed; returns the
/// entries.
TENSORSTREAM_API std::vector<CacheEntryStatus> prune_cache(
    const std::string& directory, std::chrono::system_clock::duration older_than);

/// Removes every entry of `url` that no process uses; returns those removed and those `kept`
/// because they are in use.
TENSORSTREAM_API std::vector<CacheEntryStatus> remove_from_cache(
    const std::string& directory, const std::string& url, std::vector<CacheEntryStatus>* kept);

}  // namespace tensorstream
