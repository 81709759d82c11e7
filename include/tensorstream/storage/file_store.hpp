#pragma once
/// @file
/// The file:// backend: local files read with io_uring, or with pread where io_uring is missing.

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <memory>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/file_options.hpp"
#include "tensorstream/storage/object_store.hpp"

namespace tensorstream {

/// ObjectStore over the local file system. Keys are file paths; url(key) is the path itself.
///
/// Reads go through one io_uring ring per store, created (and thereby probed) in the constructor.
/// Where io_uring is unavailable (seccomp, `kernel.io_uring_disabled`, old kernels) the store reads
/// with pread on a small thread pool of its own, logs the reason once as a warning, and says so in
/// stats().io_mode. Either way no read blocks the executor's threads; opening a file, size() and
/// list() do make their (short) system calls on the calling thread.
///
/// FileOptions::direct_io says which files are read with direct I/O (O_DIRECT), decided when a
/// file is first opened: with DirectIo::automatic, the default, those less than half of which is
/// in the page cache then. A direct read lands in place where its destination is aligned as the
/// file (see memory_alignment()), except for an unaligned first or last block, which is read into
/// a 4 KiB buffer and copied; a read into any other destination goes through the page cache. A
/// file system that refuses O_DIRECT (procfs; tmpfs before Linux 6.6) is read through the page
/// cache, as a debug log line says. stats().direct_bytes counts what was read directly.
///
/// Open file descriptors are cached per path. A file is pinned at its first access (see
/// ObjectStore) to its inode, size and modification time; after every read the open descriptor
/// is stat'ed again (and the path, once the file has lost its last link), and a file rewritten,
/// truncated, replaced or removed since throws StorageError "the file changed while it was being
/// read (...); restart the stream".
/// Devices and other files that are not regular files are not pinned.
///
/// Destroying the store while reads are in flight is a caller error. The destructor then waits
/// until neither the kernel nor a pread thread still writes into a destination, and the reads
/// that had not finished fail with StorageError "read abandoned because the file store was
/// destroyed".
class TENSORSTREAM_API FileStore final : public ObjectStore {
 public:
  /// Completions are delivered on each awaiting coroutine's own executor; `executor` runs the
  /// store's internal io_uring completion watcher. Throws InvalidArgument unless queue_depth is
  /// 1 to 4096 and pread_threads at least 1, or when direct_io is unset and
  /// TENSORSTREAM_DIRECT_IO says neither auto, on nor off.
  explicit FileStore(boost::asio::any_io_executor executor, FileOptions options = {});
  ~FileStore() override;
  FileStore(const FileStore&) = delete;
  FileStore& operator=(const FileStore&) = delete;

  /// The path itself.
  std::string url(const std::string& key) const override;

  /// Size of the file. NotFoundError if it does not exist, StorageError if it cannot be opened or
  /// is not a regular file.
  boost::asio::awaitable<std::uint64_t> size(std::string key) override;
  /// The size and the inode, size and modification time the store pinned.
  boost::asio::awaitable<ObjectStat> stat(std::string key) override;

  /// 4096 when `key` is read with direct I/O, else 0.
  std::size_t memory_alignment(const std::string& key) override;

  /// Always true.
  bool can_list() const override;

  /// Always true.
  bool can_write() const override { return true; }

  /// Writes the file `key` under a hidden temporary name in its directory
  /// (`.<name>.tensorstream-<pid>-<random>.tmp`, created exclusively), creating missing parent
  /// directories; commit() fsyncs and renames it into place, replacing an existing file whole;
  /// abort, a failure or destruction removes the temporary. `options` do not apply to files.
  std::unique_ptr<ObjectWriter> create_writer(std::string key,
                                              WriteOptions options = {}) override;

  /// Removes the writers' temporaries (`.<name>.tensorstream-<pid>-<random>.tmp`) in the
  /// directory `prefix` (ending with '/') and its subdirectories that were last written at least
  /// `older_than` ago; see ObjectStore::abort_stale_uploads. A missing directory holds none.
  /// Unlinks happen on the calling thread.
  boost::asio::awaitable<StaleUploads> abort_stale_uploads(
      std::string prefix, std::chrono::system_clock::duration older_than) override;

  /// The regular files (or links to them) in the directory `prefix`, which must end with '/'.
  /// ListDepth::recursive descends into subdirectories, but not through links to directories,
  /// which could form cycles. NotFoundError if the directory does not exist.
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override;

  /// The regular files directly in the directory `prefix` and its subdirectories, as keys
  /// ending in '/'.
  boost::asio::awaitable<Listing> list_level(std::string prefix) override;

  /// Reads `destination.size()` bytes at `offset`. A file ending before the range does throws
  /// StorageError "truncated: wanted bytes A-B but the file has N bytes" (A, B inclusive). A
  /// zero-length read only checks that the file can be opened.
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override;

  /// Requests, bytes, direct_bytes and io_mode: "io_uring", "pread (io_uring unavailable: <reason>)",
  /// "pread (io_uring disabled by option)" or
  /// "pread (io_uring disabled by TENSORSTREAM_DISABLE_IO_URING)".
  StoreStats stats() const override;

  /// Empty if this process can create an io_uring ring, else why not (e.g. "Operation not
  /// permitted"). Ignores options and the environment variable.
  static std::string io_uring_unavailable_reason();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tensorstream
