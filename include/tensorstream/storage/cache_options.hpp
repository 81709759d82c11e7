#pragma once
/// @file
/// Options of the local cache tier: a directory that keeps the bytes of the objects streams read,
/// so that the next load on the node reads them from disk (see CachedStore).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// What a stream does with the cache.
enum class CacheMode {
  /// Reads what the cache holds of the version the source reports, fetches the rest from the
  /// source and keeps it: the default where a cache directory is given.
  readwrite,
  /// Reads what the cache holds, as readwrite does, but adds nothing to it.
  read,
  /// Never asks the source: the cache's newest entry of each object is trusted as it is, and a
  /// byte it lacks is an error. For restarts where the source cannot be reached.
  offline,
  /// No cache, whatever directory is given.
  off,
};

/// The mode a name of the CLI's `--cache-mode` and `TENSORSTREAM_CACHE_MODE` gives:
/// "readwrite", "read", "offline" or "off"; nullopt for any other.
TENSORSTREAM_API std::optional<CacheMode> parse_cache_mode(std::string_view name);

/// "readwrite", "read", "offline" or "off".
TENSORSTREAM_API std::string_view cache_mode_name(CacheMode mode);

/// How much of the cache's file system stays free: the cache evicts least recently used entries,
/// then stops filling, rather than take the disk past it. Where both members are set, the
/// lesser amount is kept free.
struct CacheFloor {
  std::optional<std::uint64_t> bytes;  ///< At least this many bytes stay free.
  std::optional<unsigned> percent;     ///< At least this share of the file system stays free.

  /// The bytes to keep free on a file system of `filesystem_bytes`; 0 where neither is set.
  TENSORSTREAM_API std::uint64_t bytes_on(std::uint64_t filesystem_bytes) const;

  /// The default: 10 % of the file system or 5 GiB, whichever is less.
  TENSORSTREAM_API static CacheFloor standard();
};

/// The floor a `--cache-min-free` or `TENSORSTREAM_CACHE_MIN_FREE` value gives: a size ("5GiB",
/// "0" for none) or a share of the file system ("10%", at most 100). @throws InvalidArgument
/// naming `option` for any other text.
TENSORSTREAM_API CacheFloor parse_cache_floor(std::string_view text, std::string_view option);

/// Where and how the stores open_store() creates cache what they read. Unset members take the
/// environment's value (`TENSORSTREAM_CACHE_DIR`, `TENSORSTREAM_CACHE_SIZE`,
/// `TENSORSTREAM_CACHE_MODE`, `TENSORSTREAM_CACHE_MIN_FREE`), else no cache, no size bound,
/// readwrite and CacheFloor::standard().
struct CacheOptions {
  /// The cache's directory, created when missing; an empty string turns the cache off.
  std::optional<std::string> directory;
  /// The most bytes the cache's entries take on disk: least recently used entries no stream
  /// uses are removed to make room for a new one, and an object that still does not fit is
  /// streamed without being kept.
  std::optional<std::uint64_t> max_size;
  std::optional<CacheMode> mode;  ///< What streams do with the cache.
  /// What stays free on the cache's file system, whatever max_size allows.
  std::optional<CacheFloor> min_free;
};

}  // namespace tensorstream
