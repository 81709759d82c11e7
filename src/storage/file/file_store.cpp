#include "tensorstream/storage/file_store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <string_view>
#include <tuple>

#include "storage/builtin_schemes.hpp"
#include "storage/errno_code.hpp"
#include "storage/file/direct_io.hpp"
#include "storage/file/file_time.hpp"
#include "storage/file/file_writer.hpp"
#include "storage/file/io_uring_reader.hpp"
#include "storage/object_pins.hpp"
#include "storage/file/open_file_cache.hpp"
#include "storage/output_file.hpp"
#include "storage/file/pread_reader.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

// Enough for the shards a streamer reads at once, far below the usual limit of 1024 descriptors.
constexpr std::size_t kCachedFiles = 64;
constexpr unsigned kMaxQueueDepth = 4096;

[[noreturn]] void throw_file_error(const std::string& path,
                                   const boost::system::error_code& error) {
  if (error == boost::system::errc::no_such_file_or_directory ||
      error == boost::system::errc::not_a_directory) {
    throw NotFoundError(path, error.message());
  }
  if (error == boost::system::errc::permission_denied ||
      error == boost::system::errc::operation_not_permitted) {
    throw StorageError(path, error.message(), false, ErrorKind::access_denied);
  }
  const bool transient = error == boost::system::errc::too_many_files_open ||
                         error == boost::system::errc::too_many_files_open_in_system ||
                         error == boost::system::errc::not_enough_memory ||
                         error == boost::system::errc::resource_unavailable_try_again;
  throw StorageError(path, error.message(), transient);
}

bool disabled_by_environment() {
  const char* value = std::getenv("TENSORSTREAM_DISABLE_IO_URING");
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

void warn_unavailable_once(const std::string& reason, std::size_t threads) {
  static std::once_flag warned;
  std::call_once(warned, [&] {
    log(LogLevel::warning, "io_uring unavailable (" + reason + "); reading files with pread on " +
                               std::to_string(threads) + " threads");
  });
}

// What identifies one version of a file: a file replaced by another has another inode, one
// rewritten in place another modification time (and mostly another size).
struct FileVersion {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t modified_seconds = 0;
  std::int64_t modified_nanoseconds = 0;

  bool operator==(const FileVersion&) const = default;
};

FileVersion version_of(const struct stat& status) {
  return {static_cast<std::uint64_t>(status.st_dev), static_cast<std::uint64_t>(status.st_ino),
          static_cast<std::uint64_t>(status.st_size),
          static_cast<std::int64_t>(status.st_mtim.tv_sec),
          static_cast<std::int64_t>(status.st_mtim.tv_nsec)};
}

std::string file_change(const FileVersion& pinned, const FileVersion& seen) {
  std::string details;
  const auto add = [&](const std::string& part) {
    details += details.empty() ? "" : ", ";
    details += part;
  };
  if (seen.device != pinned.device || seen.inode != pinned.inode) {
    add("replaced by another file: inode " + std::to_string(pinned.inode) + " became " +
        std::to_string(seen.inode));
  }
  if (seen.size != pinned.size) {
    add("size " + std::to_string(pinned.size) + " became " + std::to_string(seen.size) +
        " bytes");
  }
  if (seen.modified_seconds != pinned.modified_seconds ||
      seen.modified_nanoseconds != pinned.modified_nanoseconds) {
    add("modified " + format_file_time(pinned.modified_seconds, pinned.modified_nanoseconds) +
        " became " + format_file_time(seen.modified_seconds, seen.modified_nanoseconds));
  }
  return "the file changed while it was being read (" + details + "); restart the stream";
}

// For pinned_stat(): what a file's version is to the store's callers.
ObjectVersion object_version(const FileVersion& version, std::string object) {
  const auto modified = std::chrono::seconds(version.modified_seconds) +
                        std::chrono::nanoseconds(version.modified_nanoseconds);
  return ObjectVersion::file(std::move(object), version.device, version.inode, version.size,
                             modified);
}

// For pinned_stat(): a file's version always knows its size.
std::optional<std::uint64_t> pinned_size(const FileVersion& version) { return version.size; }

using FilePins = ObjectPins<FileVersion>;

struct stat descriptor_status(const std::string& path, int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw_file_error(path, errno_code(errno));
  return status;
}

// Pins a regular file at its first access, from its open descriptor. Other files (devices) have
// no versions to tell apart; nullopt.
std::optional<FileVersion> pin(FilePins& pins, const std::string& path, int fd) {
  if (auto pinned = pins.find(path)) return pinned;
  const struct stat status = descriptor_status(path, fd);
  if (!S_ISREG(status.st_mode)) return std::nullopt;
  return pins.pin(path, version_of(status));
}

// Throws unless the file still shows the version pinned. A file rewritten in place changes under
// the open descriptor; one replaced by another (renamed over) or removed loses its last link, and
// only then is the path looked up, to say which, so that a read costs one fstat. (A file with
// another hard link, replaced at this path, goes on being read at its pinned version from the
// open descriptor; a later reopen of the path would find the new inode and fail as changed.)
void check_unchanged(FilePins& pins, const std::string& path, int fd) {
  const auto pinned = pin(pins, path, fd);
  if (!pinned) return;
  const struct stat status = descriptor_status(path, fd);
  const FileVersion open = version_of(status);
  if (open != *pinned) throw StorageError(path, file_change(*pinned, open));
  if (status.st_nlink > 0) return;
  struct stat named {};
  if (::stat(path.c_str(), &named) != 0) {
    if (errno == ENOENT) {
      throw StorageError(path, "the file was removed while it was being read; restart the stream");
    }
    throw_file_error(path, errno_code(errno));
  }
  if (version_of(named) != *pinned) {
    throw StorageError(path, file_change(*pinned, version_of(named)));
  }
}

// Where a file system accepted O_DIRECT but refuses the reads (a FUSE file system may), the
// file's later reads go through the page cache from the start.
void refuse_direct_io(const std::string& path, const OpenFile& file) {
  if (file.direct_fd() < 0) return;
  file.refuse_direct();
  log(LogLevel::debug, path + ": the file system refuses direct reads; reading through the page "
                              "cache");
}

struct Counters {
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::uint64_t> bytes{0};
  std::atomic<std::uint64_t> direct_bytes{0};
};

void check_directory_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.back() != '/') {
    throw InvalidArgument("file store listing needs a directory path ending in '/', not '" +
                          prefix + "'");
  }
}

struct DirectoryCloser {
  void operator()(DIR* directory) const { ::closedir(directory); }
};

// Appends the regular files in `directory` (ending in '/') to `objects`, and with
// ListDepth::recursive those of its subdirectories; one level deep, the subdirectories go to
// `subdirectories` when given, as paths ending in '/'.
void list_directory(const std::string& directory, ListDepth depth,
                    std::vector<ObjectInfo>& objects,
                    std::vector<std::string>* subdirectories = nullptr) {
  const std::unique_ptr<DIR, DirectoryCloser> handle(::opendir(directory.c_str()));
  if (!handle) throw_file_error(directory, errno_code(errno));
  for (;;) {
    errno = 0;
    const dirent* entry = ::readdir(handle.get());
    if (entry == nullptr) {
      if (errno != 0) throw_file_error(directory, errno_code(errno));
      break;
    }
    const std::string_view name(entry->d_name);
    if (name == "." || name == "..") continue;
    struct stat own {};
    if (::fstatat(::dirfd(handle.get()), entry->d_name, &own, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(own.st_mode)) {
      if (depth == ListDepth::recursive) {
        list_directory(directory + entry->d_name + "/", depth, objects);
      } else if (subdirectories != nullptr) {
        subdirectories->push_back(directory + entry->d_name + "/");
      }
      continue;
    }
    // Links count as what they point to, so a link to a file is that file and a dangling one is
    // skipped like anything else that is not a regular file.
    struct stat target {};
    if (::fstatat(::dirfd(handle.get()), entry->d_name, &target, 0) != 0) continue;
    if (!S_ISREG(target.st_mode)) continue;
    objects.push_back(
        ObjectInfo{directory + entry->d_name, static_cast<std::uint64_t>(target.st_size)});
  }
}

}  // namespace

class FileStore::Impl {
 public:
  Impl(boost::asio::any_io_executor executor, const FileOptions& options)
      : files(kCachedFiles, resolve_direct_io(options.direct_io)) {
    if (options.queue_depth == 0 || options.queue_depth > kMaxQueueDepth) {
      throw InvalidArgument("FileOptions::queue_depth must be between 1 and " +
                            std::to_string(kMaxQueueDepth) + ", not " +
                            std::to_string(options.queue_depth));
    }
    if (options.pread_threads == 0) {
      throw InvalidArgument("FileOptions::pread_threads must be at least 1");
    }
    if (!options.use_io_uring) {
      io_mode = "pread (io_uring disabled by option)";
    } else if (disabled_by_environment()) {
      io_mode = "pread (io_uring disabled by TENSORSTREAM_DISABLE_IO_URING)";
    } else {
      boost::system::error_code error;
      reader = IoUringReader::create(executor, options.queue_depth, error);
      if (reader) {
        io_mode = "io_uring";
      } else {
        io_mode = "pread (io_uring unavailable: " + error.message() + ")";
        warn_unavailable_once(error.message(), options.pread_threads);
      }
    }
    if (!reader) reader = std::make_unique<PreadReader>(executor, options.pread_threads);
  }

  std::shared_ptr<const OpenFile> open(const std::string& path) {
    boost::system::error_code error;
    auto file = files.open(path, error);
    if (!file) throw_file_error(path, error);
    return file;
  }

  OpenFileCache files;
  // Declared after `files`: destroyed first, while descriptors of reads it drains are still open.
  std::unique_ptr<FileReader> reader;
  std::string io_mode;
  // Shared with reads in flight, which may resume after the store is gone.
  std::shared_ptr<Counters> counters = std::make_shared<Counters>();
  std::shared_ptr<FilePins> pins = std::make_shared<FilePins>();
};

FileStore::FileStore(boost::asio::any_io_executor executor, FileOptions options)
    : impl_(std::make_unique<Impl>(std::move(executor), options)) {}

FileStore::~FileStore() = default;

std::string FileStore::url(const std::string& key) const { return key; }

bool FileStore::can_list() const { return true; }

std::size_t FileStore::memory_alignment(const std::string& key) {
  boost::system::error_code error;
  const auto file = impl_->files.open(key, error);
  return file && file->direct_fd() >= 0 ? kDirectAlignment : 0;
}

std::unique_ptr<ObjectWriter> FileStore::create_writer(std::string key, WriteOptions) {
  if (key.empty() || key.back() == '/') {
    throw InvalidArgument(key + ": a file to write needs a name, not a directory");
  }
  return std::make_unique<FileWriter>(std::move(key));
}

boost::asio::awaitable<ObjectStat> FileStore::stat(std::string key) {
  return pinned_stat(*this, *impl_->pins, std::move(key));
}

boost::asio::awaitable<std::uint64_t> FileStore::size(std::string key) {
  impl_->counters->requests.fetch_add(1, std::memory_order_relaxed);
  const auto file = impl_->open(key);
  check_unchanged(*impl_->pins, key, file->fd());
  co_return static_cast<std::uint64_t>(descriptor_status(key, file->fd()).st_size);
}

boost::asio::awaitable<std::vector<ObjectInfo>> FileStore::list(std::string prefix,
                                                                ListDepth depth) {
  impl_->counters->requests.fetch_add(1, std::memory_order_relaxed);
  check_directory_prefix(prefix);
  std::vector<ObjectInfo> objects;
  list_directory(prefix, depth, objects);
  std::sort(objects.begin(), objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  co_return objects;
}

boost::asio::awaitable<Listing> FileStore::list_level(std::string prefix) {
  impl_->counters->requests.fetch_add(1, std::memory_order_relaxed);
  check_directory_prefix(prefix);
  Listing listing;
  list_directory(prefix, ListDepth::one_level, listing.objects, &listing.prefixes);
  std::sort(listing.objects.begin(), listing.objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  std::sort(listing.prefixes.begin(), listing.prefixes.end());
  co_return listing;
}

boost::asio::awaitable<void> FileStore::read_range(std::string key, std::uint64_t offset,
                                                   std::span<std::byte> destination) {
  const auto counters = impl_->counters;
  const auto pins = impl_->pins;
  counters->requests.fetch_add(1, std::memory_order_relaxed);
  const auto file = impl_->open(key);
  pin(*pins, key, file->fd());
  if (destination.empty()) co_return;
  bool direct_refused = false;
  const FileRead read{file->fd(),
                      aligned_for_direct_io(offset, destination.data()) ? file->direct_fd() : -1,
                      offset, destination, &direct_refused};
  const auto [error] = co_await async_read_file(*impl_->reader, read,
                                                boost::asio::as_tuple(boost::asio::use_awaitable));
  // The store may be gone by now; only the coroutine's own state is safe to use.
  if (error == boost::asio::error::operation_aborted) {
    throw StorageError(key, "read abandoned because the file store was destroyed");
  }
  // A file cut short while being read reports the change rather than the truncation.
  if (!error || error == boost::asio::error::eof) check_unchanged(*pins, key, file->fd());
  if (error == boost::asio::error::eof) {
    struct stat status {};
    if (::fstat(file->fd(), &status) != 0) throw_file_error(key, errno_code(errno));
    throw StorageError(key, "truncated: wanted bytes " + std::to_string(offset) + "-" +
                                std::to_string(offset + destination.size() - 1) +
                                " but the file has " + std::to_string(status.st_size) + " bytes");
  }
  if (direct_refused) refuse_direct_io(key, *file);
  if (error) throw_file_error(key, error);
  counters->bytes.fetch_add(destination.size(), std::memory_order_relaxed);
  if (read.direct_fd >= 0 && !direct_refused) {
    counters->direct_bytes.fetch_add(destination.size(), std::memory_order_relaxed);
  }
}

boost::asio::awaitable<StaleUploads> FileStore::abort_stale_uploads(
    std::string prefix, std::chrono::system_clock::duration older_than) {
  if (prefix.empty() || prefix.back() != '/') {
    throw InvalidArgument(prefix + ": removing stale temporaries needs a directory path ending "
                                   "in '/'");
  }
  std::vector<ObjectInfo> files;
  try {
    list_directory(prefix, ListDepth::recursive, files);
  } catch (const NotFoundError&) {
    co_return StaleUploads{};
  }
  const auto now = std::chrono::system_clock::now();
  StaleUploads stale;
  for (const ObjectInfo& file : files) {
    const std::filesystem::path path(file.key);
    const auto target = detail::temporary_target(path.filename().string());
    if (!target) continue;
    struct stat status {};
    if (::lstat(file.key.c_str(), &status) != 0) {
      if (errno == ENOENT) continue;  // Committed or removed meanwhile.
      throw_file_error(file.key, errno_code(errno));
    }
    const std::chrono::system_clock::time_point modified{
        std::chrono::duration_cast<std::chrono::system_clock::duration>(
            std::chrono::seconds(status.st_mtim.tv_sec) +
            std::chrono::nanoseconds(status.st_mtim.tv_nsec))};
    if (older_than > std::chrono::system_clock::duration::zero() && now - modified < older_than) {
      ++stale.kept;
      continue;
    }
    if (::unlink(file.key.c_str()) != 0) {
      if (errno == ENOENT) continue;
      throw StorageError(file.key, "cannot remove the stale temporary: " +
                                       errno_code(errno).message());
    }
    stale.removed.push_back(
        StaleUpload{(path.parent_path() / *target).string(), file.key, modified});
  }
  std::sort(stale.removed.begin(), stale.removed.end(),
            [](const StaleUpload& a, const StaleUpload& b) {
              return std::tie(a.key, a.upload) < std::tie(b.key, b.upload);
            });
  co_return stale;
}

StoreStats FileStore::stats() const {
  StoreStats stats;
  stats.requests = impl_->counters->requests.load(std::memory_order_relaxed);
  stats.bytes = impl_->counters->bytes.load(std::memory_order_relaxed);
  stats.direct_bytes = impl_->counters->direct_bytes.load(std::memory_order_relaxed);
  stats.io_mode = impl_->io_mode;
  return stats;
}

std::string FileStore::io_uring_unavailable_reason() {
  const auto error = IoUringReader::probe();
  return error ? error.message() : std::string();
}

std::unique_ptr<ObjectStore> open_file_store(const Url&, boost::asio::any_io_executor executor,
                                             const StoreOptions& options) {
  return std::make_unique<FileStore>(std::move(executor), options.file());
}

}  // namespace tensorstream
