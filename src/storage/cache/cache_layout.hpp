#pragma once
// Where a cache directory keeps what: one directory per object (named by its URL's hash) holding
// one entry per version (named by the version's hash), and each entry's files:
//
//     DIR/objects/<hash of URL>/<hash of version and size>/info     URL, version, size
//                                                         /data     the object's bytes (sparse)
//                                                         /journal  which ranges are filled
//     DIR/listings/<hash of prefix URL and depth>                   listings, for offline use
//
// An entry appears whole (made under DIR/tmp/, then renamed into place). A process that uses
// it holds a shared flock() on its info file; removal takes it exclusively, without waiting,
// so an entry in use is never removed. An entry's last use is its info file's mtime.

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace tensorstream::detail {

/// What an entry caches.
struct EntryInfo {
  std::string url;
  std::string version;
  std::uint64_t size = 0;
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

/// The directory of `url`'s entries under the cache `root`.
std::filesystem::path object_directory(const std::filesystem::path& root, const std::string& url);

/// The directory of the entry of `info` under `root`.
std::filesystem::path entry_directory(const std::filesystem::path& root, const EntryInfo& info);

/// Whether `info` can name an entry: a version to tell versions apart, and no line break in the
/// URL or version (the info file is line based).
bool cacheable(const EntryInfo& info);

/// The info file's contents of `directory`; nullopt when it is missing or unreadable.
std::optional<EntryInfo> read_entry_info(const std::filesystem::path& directory);

/// Makes the entry of `info` (an empty data file of its size) unless it exists, and returns its
/// directory. Throws StorageError naming the directory when the file system refuses.
std::filesystem::path create_entry(const std::filesystem::path& root, const EntryInfo& info);

/// Every entry under `root`, in no order; entries being made or removed are skipped.
std::vector<EntryOnDisk> list_entries(const std::filesystem::path& root);

/// The blocks the files of the entry at `directory` take.
std::uint64_t entry_disk_bytes(const std::filesystem::path& directory);

/// Removes the entry at `directory` unless a process uses it; whether it did.
bool remove_entry_if_unused(const std::filesystem::path& directory);

/// Removes least recently used entries that no process uses, other than `keep`, until the
/// entries take at most `max_size - needed` bytes; whether they do then.
bool make_room(const std::filesystem::path& root, std::uint64_t needed, std::uint64_t max_size,
               const std::filesystem::path& keep);

/// The file of the saved listing of `prefix_url` at `depth` ("one" or "all").
std::filesystem::path listing_file(const std::filesystem::path& root, const std::string& prefix_url,
                                   const std::string& depth);

/// Writes `contents` to `file`, atomically (a temporary renamed into place).
void write_file_atomically(const std::filesystem::path& file, const std::string& contents);

/// The contents of `file`; nullopt when it is missing.
std::optional<std::string> read_small_file(const std::filesystem::path& file);

}  // namespace tensorstream::detail
