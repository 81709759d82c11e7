#pragma once
// Read-only file descriptors kept open per path, so repeated reads of a file skip open().

#include <atomic>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "tensorstream/storage/file_options.hpp"

namespace tensorstream {

// One open read-only descriptor, closed when the last holder lets go; readers hold it for as long
// as the kernel may still use the descriptor, so eviction from the cache never closes it early.
class OpenFile {
 public:
  explicit OpenFile(int fd) : fd_(fd) {}
  ~OpenFile();
  OpenFile(const OpenFile&) = delete;
  OpenFile& operator=(const OpenFile&) = delete;

  int fd() const { return fd_; }

  /// The same file opened with O_DIRECT, which its reads go through; -1 when they go through the
  /// page cache.
  int direct_fd() const {
    return direct_refused_.load(std::memory_order_relaxed) ? -1 : direct_fd_;
  }

  /// Gives the file `direct_fd`, once, right after opening.
  void set_direct_fd(int direct_fd) { direct_fd_ = direct_fd; }

  /// Reads go through the page cache from now on: the file system refused a direct read.
  void refuse_direct() const { direct_refused_.store(true, std::memory_order_relaxed); }

 private:
  int fd_;
  int direct_fd_ = -1;
  mutable std::atomic<bool> direct_refused_{false};
};

// Thread-safe; keeps the `capacity` most recently used paths open, with direct I/O as `direct_io`
// says.
class OpenFileCache {
 public:
  OpenFileCache(std::size_t capacity, DirectIo direct_io)
      : capacity_(capacity), direct_io_(direct_io) {}

  // The open file at `path`, or null with `error` set to the errno of open() (EISDIR for a
  // directory).
  std::shared_ptr<const OpenFile> open(const std::string& path, boost::system::error_code& error);

 private:
  using Recency = std::list<std::string>;
  struct Entry {
    std::shared_ptr<const OpenFile> file;
    Recency::iterator position;
  };

  std::size_t capacity_;
  DirectIo direct_io_;
  std::mutex mutex_;
  Recency recency_;  // most recently used first
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace tensorstream
