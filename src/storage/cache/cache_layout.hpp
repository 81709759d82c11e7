#pragma once
// Where a cache directory keeps what: one directory per object (named by the hash of its
// identity) holding one entry per version (named by the hash of the version's cache key and the
// object's size), and each entry's files:
//
//     DIR/objects/<hash of identity>/<hash of version and size>/info     URL, version, size, ...
//                                                         /data     the object's bytes (sparse)
//                                                         /journal  which ranges are filled
//     DIR/listings/<hash of prefix URL and depth>                   listings, for offline use
//
// An entry appears whole (made under DIR/tmp/, then renamed into place) and disappears whole
// (renamed into DIR/tmp/, then removed); what a killed process left in DIR/tmp/ is swept away
// later. A process that uses an entry holds a shared flock() on its info file; removal takes it
// exclusively, without waiting, so an entry in use is never removed. An entry's last use is its
// info file's mtime, which only streams set.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/storage/object_version.hpp"

namespace tensorstream::detail {

/// What an entry caches.
struct EntryInfo {
  std::string url;
  /// Which bytes: an unsettled version's (ObjectVersion::settled) are trusted only offline.
  /// Empty for an entry of an earlier build, which no stream opens.
  ObjectVersion version;
  std::uint64_t size = 0;
  /// What names the object across stores (ObjectStore::object_identity); empty: the URL.
  std::string identity{};

  const std::string& key() const { return identity.empty() ? url : identity; }
};

/// An entry as found on disk.
struct EntryOnDisk {
  std::filesystem::path directory;
  EntryInfo info;
  std::uint64_t disk_bytes = 0;  ///< Blocks its files take.
  std::chrono::system_clock::time_point last_used;
};

/// Whether `root` is a directory that holds files of its own at its top but no objects/: a
/// model's directory given as the cache by mistake. Subdirectories alone (a new volume's
/// lost+found) do not count.
bool holds_other_files(const std::filesystem::path& root);

/// The directory of the entries of the object `identity` (EntryInfo::key) under the cache `root`.
std::filesystem::path object_directory(const std::filesystem::path& root,
                                       const std::string& identity);

/// The directory of the entry of `info` under `root`.
std::filesystem::path entry_directory(const std::filesystem::path& root, const EntryInfo& info);

/// Whether `info` can name an entry: a version to tell versions apart, and no line break in the
/// URL or identity (the info file is line based).
bool cacheable(const EntryInfo& info);

/// The info file's contents of `directory`; nullopt when it is missing or unreadable.
std::optional<EntryInfo> read_entry_info(const std::filesystem::path& directory);

/// Makes the entry of `info` (an empty data file of its size) unless it exists, and returns its
/// directory. Throws StorageError naming the file and the errno when the file system refuses.
std::filesystem::path create_entry(const std::filesystem::path& root, const EntryInfo& info);

/// The size of the file system that holds `root`, and the bytes free on it for unprivileged
/// writers.
struct DiskSpace {
  std::uint64_t total = 0;
  std::uint64_t available = 0;
};

/// The space of the file system of `root`; nullopt when it cannot be asked (statvfs fails).
std::optional<DiskSpace> disk_space(const std::filesystem::path& root);

/// What make_room() makes room for, and within what.
struct RoomRequest {
  std::uint64_t needed = 0;                  ///< Bytes about to be written.
  std::optional<std::uint64_t> max_size;     ///< The most the cache takes, nullopt: no bound.
  std::uint64_t counted_beside = 0;          ///< Bytes to count as the cache's beside its files
                                             ///< (entries being filled, not yet on disk).
  std::uint64_t min_free = 0;                ///< Bytes of the file system that stay free.
  std::uint64_t pending_writes = 0;          ///< Bytes about to be written besides `needed`.
  std::filesystem::path keep;                ///< An entry not to remove.
};

/// Every entry under `root`, in no order; entries being made or removed are skipped.
std::vector<EntryOnDisk> list_entries(const std::filesystem::path& root);

/// The blocks the files of the entry at `directory` take.
std::uint64_t entry_disk_bytes(const std::filesystem::path& directory);

/// Removes the entry at `directory` unless a process uses it; whether it did.
bool remove_entry_if_unused(const std::filesystem::path& directory);

/// What make_room() achieved.
enum class Room {
  made,          ///< Both bounds hold.
  over_size,     ///< The cache would still take more than max_size.
  under_floor,   ///< The file system would still have less than min_free free.
};

/// Removes least recently used entries that no process uses, other than `keep`, until the cache
/// (its entries, what DIR/tmp/ holds and `counted_beside`) takes at most `max_size - needed`
/// bytes and the file system keeps `min_free` bytes free after `needed` and `pending_writes` more
/// are written; says which bound, if any, still fails.
Room make_room(const std::filesystem::path& root, const RoomRequest& request);

/// Removes what processes left in `root`/tmp/ that no process will finish: entries half made or
/// half removed by a process that is gone (a minute after it was last written), and anything
/// older than an hour. Returns the bytes it freed.
std::uint64_t sweep_abandoned(const std::filesystem::path& root);

/// The blocks what `root`/tmp/ holds take.
std::uint64_t pending_bytes(const std::filesystem::path& root);

/// The file of the saved listing of `prefix_url` at `depth` ("one" or "all").
std::filesystem::path listing_file(const std::filesystem::path& root, const std::string& prefix_url,
                                   const std::string& depth);

/// Writes `contents` to `file`, atomically (a temporary renamed into place). Throws StorageError
/// naming the file and the errno.
void write_file_atomically(const std::filesystem::path& file, const std::string& contents);

/// The contents of `file`; nullopt when it is missing.
std::optional<std::string> read_small_file(const std::filesystem::path& file);

}  // namespace tensorstream::detail
