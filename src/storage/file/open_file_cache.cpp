#include "storage/file/open_file_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "storage/errno_code.hpp"
#include "storage/file/direct_io.hpp"

namespace tensorstream {
namespace {

// O_NONBLOCK so that opening a FIFO cannot hang; it is cleared again for everything but regular
// files, where it has no effect on reads anyway.
std::shared_ptr<const OpenFile> open_file(const std::string& path, DirectIo direct_io,
                                          boost::system::error_code& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = errno_code(errno);
    return nullptr;
  }
  auto file = std::make_shared<OpenFile>(fd);
  struct stat status {};
  if (::fstat(fd, &status) != 0) {
    error = errno_code(errno);
    return nullptr;
  }
  if (S_ISDIR(status.st_mode)) {
    error = errno_code(EISDIR);
    return nullptr;
  }
  if (!S_ISREG(status.st_mode) && ::fcntl(fd, F_SETFL, 0) != 0) {
    error = errno_code(errno);
    return nullptr;
  }
  file->set_direct_fd(open_direct(path, fd, direct_io));
  return file;
}

}  // namespace

OpenFile::~OpenFile() {
  ::close(fd_);
  if (direct_fd_ >= 0) ::close(direct_fd_);
}

std::shared_ptr<const OpenFile> OpenFileCache::open(const std::string& path,
                                                    boost::system::error_code& error) {
  {
    std::lock_guard lock(mutex_);
    if (const auto found = entries_.find(path); found != entries_.end()) {
      recency_.splice(recency_.begin(), recency_, found->second.position);
      return found->second.file;
    }
  }
  // Opened outside the lock: open() may wait on a slow file system. Two threads racing for the
  // same path both open it and the loser's descriptor is closed again.
  auto file = open_file(path, direct_io_, error);
  if (!file) return nullptr;
  std::lock_guard lock(mutex_);
  if (const auto found = entries_.find(path); found != entries_.end()) {
    recency_.splice(recency_.begin(), recency_, found->second.position);
    return found->second.file;
  }
  recency_.push_front(path);
  entries_.emplace(path, Entry{file, recency_.begin()});
  if (entries_.size() > capacity_) {
    entries_.erase(recency_.back());
    recency_.pop_back();
  }
  return file;
}

}  // namespace tensorstream
