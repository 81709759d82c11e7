#pragma once
/// @file
/// Owning a file descriptor.

#include <utility>

#include "tensorstream/export.hpp"

namespace tensorstream::store {

/// Owns one file descriptor and closes it on destruction, like std::unique_ptr for memory.
/// Descriptors received from a store server arrive as UniqueFd, so that whatever the receiver
/// does not keep is closed.
class TENSORSTREAM_API UniqueFd {
 public:
  /// Owns nothing.
  UniqueFd() noexcept = default;
  /// Takes ownership of `fd` (-1 for none).
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }

  /// The descriptor, still owned; -1 when empty.
  int get() const noexcept { return fd_; }
  /// Whether a descriptor is owned.
  explicit operator bool() const noexcept { return fd_ >= 0; }
  /// Gives up ownership and returns the descriptor (-1 when empty).
  int release() noexcept { return std::exchange(fd_, -1); }
  /// Closes the owned descriptor, if any, and takes ownership of `fd`.
  void reset(int fd = -1) noexcept;

 private:
  int fd_ = -1;
};

}  // namespace tensorstream::store
