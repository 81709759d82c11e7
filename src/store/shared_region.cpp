#include "tensorstream/store/shared_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <system_error>
#include <utility>

#include "tensorstream/error.hpp"

namespace tensorstream::store {

SharedRegion::SharedRegion(std::string name, std::uint64_t size)
    : name_(std::move(name)), size_(size) {
  if (size_ > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) {
    fail("ftruncate to " + std::to_string(size_) + " bytes", EFBIG);
  }
  fd_.reset(::memfd_create(name_.c_str(), MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd_) fail("memfd_create", errno);
  if (::ftruncate(fd_.get(), static_cast<off_t>(size_)) != 0) {
    fail("ftruncate to " + std::to_string(size_) + " bytes", errno);
  }
  map(PROT_READ | PROT_WRITE);
}

SharedRegion::SharedRegion(SharedRegion&& other) noexcept
    : name_(std::move(other.name_)),
      size_(other.size_),
      fd_(std::move(other.fd_)),
      mapping_(std::exchange(other.mapping_, nullptr)),
      sealed_(other.sealed_) {}

SharedRegion& SharedRegion::operator=(SharedRegion&& other) noexcept {
  if (this != &other) {
    unmap();
    name_ = std::move(other.name_);
    size_ = other.size_;
    fd_ = std::move(other.fd_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    sealed_ = other.sealed_;
  }
  return *this;
}

SharedRegion::~SharedRegion() { unmap(); }

std::span<std::byte> SharedRegion::writable() {
  if (sealed_) throw StateError("shared region " + name_ + ": sealed read-only, cannot be written");
  return {static_cast<std::byte*>(mapping_), mapping_ ? static_cast<std::size_t>(size_) : 0};
}

bool SharedRegion::populate(std::stop_token stop) noexcept {
  if (mapping_ == nullptr || sealed_) return false;
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older headers lack it.
#endif
  auto* const base = static_cast<std::byte*>(mapping_);
  for (std::uint64_t offset = 0; offset < size_; offset += populate_step) {
    if (stop.stop_requested()) return false;
    const auto length = static_cast<std::size_t>(std::min(populate_step, size_ - offset));
    if (::madvise(base + offset, length, MADV_POPULATE_WRITE) != 0) return false;
  }
  return true;
}

void SharedRegion::seal_read_only() {
  if (sealed_) throw StateError("shared region " + name_ + ": already sealed");
  unmap();
  if (::fcntl(fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) !=
      0) {
    const int error = errno;
    map(PROT_READ | PROT_WRITE);
    fail("sealing read-only (F_ADD_SEALS)", error);
  }
  sealed_ = true;
  map(PROT_READ);
}

void SharedRegion::seal_size() {
  if (::fcntl(fd_.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    fail("sealing its size (F_ADD_SEALS)", errno);
  }
}

void SharedRegion::map(int protection) {
  if (size_ == 0) return;
  void* mapping = ::mmap(nullptr, size_, protection, MAP_SHARED, fd_.get(), 0);
  if (mapping == MAP_FAILED) fail("mmap", errno);
  // Shared memory gets huge pages only where the administrator allows them for mappings that ask
  // (/sys/kernel/mm/transparent_hugepage/shmem_enabled = advise); under the kernel's default,
  // never, this asks in vain. See docs/store-server.md#huge-pages for what they cost and save.
  ::madvise(mapping, size_, MADV_HUGEPAGE);
  mapping_ = mapping;
}

void SharedRegion::unmap() noexcept {
  if (mapping_) ::munmap(mapping_, size_);
  mapping_ = nullptr;
}

void SharedRegion::fail(const std::string& operation, int error) const {
  throw StorageError("shared region " + name_, operation + ": " +
                                                   std::system_category().message(error));
}

}  // namespace tensorstream::store
