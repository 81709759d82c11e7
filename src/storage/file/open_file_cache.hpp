#pragma once
// Read-only file descriptors kept open per path, so repeated reads of a file skip open().

#include <boost/system/error_code.hpp>
#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

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

 private:
  int fd_;
};

// Thread-safe; keeps the `capacity` most recently used paths open.
class OpenFileCache {
 public:
  explicit OpenFileCache(std::size_t capacity) : capacity_(capacity) {}

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
  std::mutex mutex_;
  Recency recency_;  // most recently used first
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace tensorstream
