#include "support/small_disk.hpp"

#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace tensorstream::testing {

std::optional<SmallDisk> SmallDisk::create(std::uint64_t bytes, std::string& why) {
  auto directory = std::make_unique<TempDir>();
  const std::string options = "size=" + std::to_string(bytes);
  if (::mount("tmpfs", directory->path().c_str(), "tmpfs", 0, options.c_str()) != 0) {
    why = "cannot mount a tmpfs (" + std::string(std::strerror(errno)) +
          "): the test needs CAP_SYS_ADMIN";
    return std::nullopt;
  }
  return SmallDisk(std::move(directory));
}

SmallDisk::SmallDisk(std::unique_ptr<TempDir> mounted) : mounted_(std::move(mounted)) {}

SmallDisk::SmallDisk(SmallDisk&& other) noexcept : mounted_(std::move(other.mounted_)) {}

SmallDisk::~SmallDisk() {
  if (mounted_) ::umount2(mounted_->path().c_str(), MNT_DETACH);
}

std::uint64_t SmallDisk::available() const {
  struct statvfs status {};
  if (::statvfs(path().c_str(), &status) != 0) throw std::runtime_error("statvfs failed");
  return static_cast<std::uint64_t>(status.f_bavail) * status.f_frsize;
}

std::uint64_t SmallDisk::total() const {
  struct statvfs status {};
  if (::statvfs(path().c_str(), &status) != 0) throw std::runtime_error("statvfs failed");
  return static_cast<std::uint64_t>(status.f_blocks) * status.f_frsize;
}

void SmallDisk::set_read_only(bool read_only) {
  const unsigned long flags = MS_REMOUNT | (read_only ? MS_RDONLY : 0);
  if (::mount("tmpfs", path().c_str(), "tmpfs", flags, nullptr) != 0) {
    throw std::runtime_error("cannot remount " + path().string() + ": " + std::strerror(errno));
  }
}

}  // namespace tensorstream::testing
