#include "tensorstream/store/unique_fd.hpp"

#include <unistd.h>

namespace tensorstream::store {

void UniqueFd::reset(int fd) noexcept {
  // Linux releases the descriptor even when close() fails (EINTR included): never retry.
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

}  // namespace tensorstream::store
