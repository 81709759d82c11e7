#include "tensorstream/storage/cache_directory.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "storage/cache/cache_entry.hpp"
#include "storage/cache/cache_layout.hpp"
#include "tensorstream/error.hpp"

namespace fs = std::filesystem;

namespace tensorstream {
namespace {

bool entry_in_use(const fs::path& directory) {
  const int info = ::open((directory / "info").c_str(), O_RDONLY | O_CLOEXEC);
  if (info < 0) return false;
  const bool in_use = ::flock(info, LOCK_EX | LOCK_NB) != 0;
  ::close(info);
  return in_use;
}

CacheEntryStatus status_of(const detail::EntryOnDisk& found) {
  CacheEntryStatus status;
  status.url = found.info.url;
  status.version = found.info.version;
  status.size = found.info.size;
  status.disk_bytes = found.disk_bytes;
  status.last_used = found.last_used;
  status.directory = found.directory.string();
  status.in_use = entry_in_use(found.directory);
  if (auto entry = detail::CacheEntry::open(found.directory, found.info, false,
                                            detail::CacheEntry::Use::inspect)) {
    status.cached_bytes = entry->filled_bytes();
  }
  return status;
}

}  // namespace

std::vector<CacheEntryStatus> list_cache(const std::string& directory) {
  std::vector<CacheEntryStatus> entries;
  for (const auto& found : detail::list_entries(directory)) entries.push_back(status_of(found));
  std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    return a.url != b.url ? a.url < b.url : a.last_used > b.last_used;
  });
  return entries;
}

std::vector<CacheCheck> verify_cache(const std::string& directory) {
  std::vector<CacheCheck> checks;
  for (const auto& status : list_cache(directory)) {
    CacheCheck check;
    check.entry = status;
    const auto info = detail::read_entry_info(status.directory);
    if (!info) continue;
    const auto entry =
        detail::CacheEntry::open(status.directory, *info, true, detail::CacheEntry::Use::inspect);
    if (!entry) continue;
    for (const auto& segment : entry->overlapping(0, status.size)) {
      // An empty destination: the whole range goes through the entry's small buffer.
      check.checked_bytes += segment.length;
      if (!entry->read(segment, segment.offset, {})) {
        check.damaged_bytes += segment.length;
        ++check.damaged_ranges;
      }
    }
    checks.push_back(std::move(check));
  }
  return checks;
}

CacheSpace cache_space(const std::string& directory, const CacheFloor& floor) {
  const auto space = detail::disk_space(directory);
  if (!space) {
    throw StorageError(directory, std::string("cannot tell the free space: ") + std::strerror(errno));
  }
  return CacheSpace{space->total, space->available, floor.bytes_on(space->total),
                    detail::pending_bytes(directory)};
}

std::vector<CacheEntryStatus> prune_cache(const std::string& directory,
                                          std::chrono::system_clock::duration older_than) {
  detail::sweep_abandoned(directory);
  const auto cutoff = std::chrono::system_clock::now() - older_than;
  std::vector<CacheEntryStatus> removed;
  for (const auto& status : list_cache(directory)) {
    if (status.last_used > cutoff || status.in_use) continue;
    if (detail::remove_entry_if_unused(status.directory)) removed.push_back(status);
  }
  return removed;
}

std::vector<CacheEntryStatus> remove_from_cache(const std::string& directory,
                                                const std::string& url,
                                                std::vector<CacheEntryStatus>* kept) {
  std::vector<CacheEntryStatus> removed;
  for (const auto& status : list_cache(directory)) {
    if (status.url != url) continue;
    if (detail::remove_entry_if_unused(status.directory)) {
      removed.push_back(status);
    } else if (kept) {
      kept->push_back(status);
    }
  }
  return removed;
}

}  // namespace tensorstream
