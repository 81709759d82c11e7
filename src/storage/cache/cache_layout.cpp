#include "storage/cache/cache_layout.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <system_error>

#include "tensorstream/error.hpp"

namespace fs = std::filesystem;

namespace tensorstream::detail {
namespace {

// An info file's first line. Entries of format 1 named their version as messages do, which is
// no identity: they are listed (and so evicted and pruned) but their version is not read, so
// that no stream opens them.
constexpr std::string_view info_header = "tensorstream-cache-entry 2";
constexpr std::string_view earlier_info_header = "tensorstream-cache-entry 1";

// The first 16 bytes of the SHA-256 of `text`, in hex: names that do not collide in practice
// and say nothing a file name could not hold.
std::string short_hash(const std::string& text) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
  static constexpr char hex[] = "0123456789abcdef";
  std::string name;
  for (unsigned int i = 0; i < 16 && i < length; ++i) {
    name += hex[digest[i] >> 4];
    name += hex[digest[i] & 15];
  }
  return name;
}

std::string random_name() {
  static thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::to_string(::getpid()) + "-" + std::to_string(generator());
}

[[noreturn]] void fail(const fs::path& path, const std::string& what, int error) {
  throw StorageError(path.string(), what + ": " + std::strerror(error));
}

std::uint64_t file_blocks(const fs::path& file) {
  struct stat status {};
  if (::stat(file.c_str(), &status) != 0) return 0;
  return static_cast<std::uint64_t>(status.st_blocks) * 512;
}

// Creates `file` (which must not exist) holding `contents`; throws naming it and the errno.
void write_new_file(const fs::path& file, std::string_view contents) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(file, "cannot write", errno);
  for (std::size_t done = 0; done < contents.size();) {
    const ssize_t wrote = ::write(fd, contents.data() + done, contents.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) {
      const int cause = wrote < 0 ? errno : EIO;
      ::close(fd);
      fail(file, "cannot write", cause);
    }
    done += static_cast<std::size_t>(wrote);
  }
  if (::close(fd) != 0) fail(file, "cannot write", errno);
}

// The blocks of every file under `directory`, not following links.
std::uint64_t tree_blocks(const fs::path& directory) {
  std::uint64_t total = 0;
  std::error_code error;
  for (fs::recursive_directory_iterator it(directory, error), end; !error && it != end;
       it.increment(error)) {
    struct stat status {};
    if (::lstat(it->path().c_str(), &status) == 0) {
      total += static_cast<std::uint64_t>(status.st_blocks) * 512;
    }
  }
  return total;
}

// Whether the process that named a draft `name` ("PID-…", "removed-PID-…", ".PID-….tmp") may
// still be at work on it: it runs, or the name says no process.
bool maker_may_run(std::string_view name) {
  for (const std::string_view prefix : {"removed-", "."}) {
    if (name.starts_with(prefix)) name.remove_prefix(prefix.size());
  }
  int pid = 0;
  const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (error != std::errc() || end == name.data() || pid <= 0) return true;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Removes the drafts in `directory` (for which `is_draft` holds) that no process will finish.
std::uint64_t sweep_drafts(const fs::path& directory, bool (*is_draft)(const std::string&)) {
  using namespace std::chrono_literals;
  const auto now = fs::file_time_type::clock::now();
  std::uint64_t freed = 0;
  std::error_code error;
  for (fs::directory_iterator it(directory, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (!is_draft(name)) continue;
    std::error_code inner;
    const auto age = now - fs::last_write_time(it->path(), inner);
    if (inner) continue;
    if (age < 1min || (age < 1h && maker_may_run(name))) continue;
    const std::uint64_t blocks = it->is_directory(inner) ? tree_blocks(it->path())
                                                         : file_blocks(it->path());
    if (fs::remove_all(it->path(), inner) > 0 && !inner) freed += blocks;
  }
  return freed;
}

}  // namespace

fs::path object_directory(const fs::path& root, const std::string& identity) {
  return root / "objects" / short_hash(identity);
}

fs::path entry_directory(const fs::path& root, const EntryInfo& info) {
  return object_directory(root, info.key()) /
         short_hash(info.version.cache_key() + "\n" + std::to_string(info.size));
}

bool holds_other_files(const fs::path& root) {
  std::error_code error;
  if (!fs::is_directory(root, error) || fs::is_directory(root / "objects", error)) return false;
  for (fs::directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    if (!it->is_directory(error)) return true;
  }
  return false;
}

bool cacheable(const EntryInfo& info) {
  const auto has_break = [](const std::string& text) {
    return text.find_first_of("\r\n") != std::string::npos;
  };
  return !info.version.empty() && !has_break(info.url) && !has_break(info.identity);
}

std::optional<EntryInfo> read_entry_info(const fs::path& directory) {
  const auto text = read_small_file(directory / "info");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  if (!std::getline(lines, line) || (line != info_header && line != earlier_info_header)) {
    return std::nullopt;
  }
  const bool versioned = line == info_header;
  EntryInfo info;
  bool have_size = false;
  while (std::getline(lines, line)) {
    const auto space = line.find(' ');
    if (space == std::string::npos) continue;
    const std::string key = line.substr(0, space);
    std::string value = line.substr(space + 1);
    if (key == "url") info.url = std::move(value);
    if (key == "version" && versioned) {
      const auto version = ObjectVersion::decode(value);
      if (!version) return std::nullopt;
      info.version = *version;
    }
    if (key == "identity") info.identity = std::move(value);
    if (key == "size") {
      try {
        std::size_t used = 0;
        info.size = std::stoull(value, &used);
        have_size = used == value.size();
      } catch (const std::exception&) {
        return std::nullopt;
      }
    }
  }
  if (!have_size || info.url.empty()) return std::nullopt;
  return info;
}

fs::path create_entry(const fs::path& root, const EntryInfo& info) {
  const fs::path final_directory = entry_directory(root, info);
  if (fs::exists(final_directory / "info")) return final_directory;
  std::error_code error;
  for (const fs::path& directory : {root / "tmp", final_directory.parent_path()}) {
    fs::create_directories(directory, error);
    if (error) fail(directory, "cannot create the cache directory", error.value());
  }
  const fs::path draft = root / "tmp" / random_name();
  if (::mkdir(draft.c_str(), 0755) != 0) fail(draft, "cannot create a cache entry", errno);
  const auto discard = [&] { fs::remove_all(draft, error); };
  {
    const int data = ::open((draft / "data").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (data < 0 || ::ftruncate(data, static_cast<off_t>(info.size)) != 0) {
      const int cause = errno;
      if (data >= 0) ::close(data);
      discard();
      fail(draft / "data", "cannot create a cache entry's data file", cause);
    }
    ::close(data);
    const int journal =
        ::open((draft / "journal").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (journal < 0) {
      const int cause = errno;
      discard();
      fail(draft / "journal", "cannot create a cache entry's journal", cause);
    }
    ::close(journal);
    std::string text = std::string(info_header) + "\nurl " + info.url + "\nversion " +
                       info.version.encode() + "\nsize " + std::to_string(info.size) + "\n";
    if (!info.identity.empty()) text += "identity " + info.identity + "\n";
    try {
      write_new_file(draft / "info", text);
    } catch (const StorageError&) {
      discard();
      throw;
    }
  }
  // Another process may have made the same entry meanwhile: then its entry is the one.
  if (::rename(draft.c_str(), final_directory.c_str()) != 0) {
    const int cause = errno;
    discard();
    if (cause != EEXIST && cause != ENOTEMPTY) fail(final_directory, "cannot add a cache entry", cause);
  }
  return final_directory;
}

std::vector<EntryOnDisk> list_entries(const fs::path& root) {
  std::vector<EntryOnDisk> entries;
  std::error_code error;
  for (fs::directory_iterator object(root / "objects", error), end; !error && object != end;
       object.increment(error)) {
    std::error_code inner;
    for (fs::directory_iterator version(object->path(), inner), last; !inner && version != last;
         version.increment(inner)) {
      auto info = read_entry_info(version->path());
      if (!info) continue;
      struct stat status {};
      if (::stat((version->path() / "info").c_str(), &status) != 0) continue;
      EntryOnDisk entry;
      entry.directory = version->path();
      entry.info = std::move(*info);
      entry.disk_bytes = entry_disk_bytes(entry.directory);
      entry.last_used = std::chrono::system_clock::time_point(
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::seconds(status.st_mtim.tv_sec) +
              std::chrono::nanoseconds(status.st_mtim.tv_nsec)));
      entries.push_back(std::move(entry));
    }
  }
  return entries;
}

std::uint64_t entry_disk_bytes(const fs::path& directory) {
  return file_blocks(directory / "data") + file_blocks(directory / "journal") +
         file_blocks(directory / "info");
}

bool remove_entry_if_unused(const fs::path& directory) {
  const int info = ::open((directory / "info").c_str(), O_RDONLY | O_CLOEXEC);
  if (info < 0) return false;
  if (::flock(info, LOCK_EX | LOCK_NB) != 0) {
    ::close(info);
    return false;
  }
  // Renamed away first, so that no process finds a half-removed entry under its name.
  const fs::path doomed = directory.parent_path().parent_path().parent_path() / "tmp" /
                          ("removed-" + random_name());
  std::error_code error;
  fs::create_directories(doomed.parent_path(), error);
  const bool moved = ::rename(directory.c_str(), doomed.c_str()) == 0;
  ::close(info);
  if (!moved) return false;
  fs::remove_all(doomed, error);
  fs::remove(directory.parent_path(), error);  // the object's directory, once it is empty
  return true;
}

std::optional<DiskSpace> disk_space(const fs::path& root) {
  struct statvfs status {};
  if (::statvfs(root.c_str(), &status) != 0) return std::nullopt;
  return DiskSpace{static_cast<std::uint64_t>(status.f_blocks) * status.f_frsize,
                   static_cast<std::uint64_t>(status.f_bavail) * status.f_frsize};
}

Room make_room(const fs::path& root, const RoomRequest& request) {
  const std::uint64_t needed = request.needed;
  if (request.max_size && needed > *request.max_size) return Room::over_size;
  const auto fits_size = [&](std::uint64_t total) {
    return !request.max_size || total + request.counted_beside + needed <= *request.max_size;
  };
  const auto keeps_floor = [&] {
    const auto space = disk_space(root);
    // A file system that cannot say its space is left to fail writes, which the cache survives.
    return !space || space->available >= request.min_free + needed + request.pending_writes;
  };
  std::vector<EntryOnDisk> entries;
  std::uint64_t total = 0;
  if (request.max_size) {
    entries = list_entries(root);
    total = pending_bytes(root);
    for (const auto& entry : entries) total += entry.disk_bytes;
  }
  if (fits_size(total) && keeps_floor()) return Room::made;
  if (!request.max_size) entries = list_entries(root);
  std::sort(entries.begin(), entries.end(),
            [](const EntryOnDisk& a, const EntryOnDisk& b) { return a.last_used < b.last_used; });
  for (const auto& entry : entries) {
    if (entry.directory == request.keep) continue;
    if (remove_entry_if_unused(entry.directory)) {
      total -= std::min(total, entry.disk_bytes);
      if (fits_size(total) && keeps_floor()) return Room::made;
    }
  }
  return fits_size(total) ? Room::under_floor : Room::over_size;
}

std::uint64_t sweep_abandoned(const fs::path& root) {
  return sweep_drafts(root / "tmp", [](const std::string&) { return true; }) +
         sweep_drafts(root / "listings", [](const std::string& name) {
           return name.starts_with(".") && name.ends_with(".tmp");
         });
}

std::uint64_t pending_bytes(const fs::path& root) { return tree_blocks(root / "tmp"); }

fs::path listing_file(const fs::path& root, const std::string& prefix_url,
                      const std::string& depth) {
  return root / "listings" / short_hash(depth + " " + prefix_url);
}

void write_file_atomically(const fs::path& file, const std::string& contents) {
  std::error_code error;
  fs::create_directories(file.parent_path(), error);
  if (error) fail(file.parent_path(), "cannot create the directory", error.value());
  const fs::path draft = file.parent_path() / ("." + random_name() + ".tmp");
  try {
    write_new_file(draft, contents);
  } catch (const StorageError&) {
    fs::remove(draft, error);
    throw;
  }
  if (::rename(draft.c_str(), file.c_str()) != 0) {
    const int cause = errno;
    fs::remove(draft, error);
    fail(file, "cannot write", cause);
  }
}

std::optional<std::string> read_small_file(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace tensorstream::detail
