#pragma once
// A small file system for one test: a full or read-only disk under a cache, as a node meets it.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "support/temp_dir.hpp"

namespace tensorstream::testing {

/// A tmpfs of a given size mounted on a fresh directory, unmounted on destruction. Mounting needs
/// CAP_SYS_ADMIN (root, as CI runs); where it is refused, create() says why.
class SmallDisk {
 public:
  /// Mounts a tmpfs of `bytes`; nullopt, with the reason in `why`, where the system refuses.
  static std::optional<SmallDisk> create(std::uint64_t bytes, std::string& why);
  SmallDisk(SmallDisk&& other) noexcept;
  SmallDisk& operator=(SmallDisk&&) = delete;
  ~SmallDisk();

  const std::filesystem::path& path() const { return mounted_->path(); }

  /// Bytes free for unprivileged writers.
  std::uint64_t available() const;
  /// The file system's size.
  std::uint64_t total() const;

  /// Makes it read-only (true) or writable again.
  void set_read_only(bool read_only);

 private:
  explicit SmallDisk(std::unique_ptr<TempDir> mounted);
  std::unique_ptr<TempDir> mounted_;
};

}  // namespace tensorstream::testing
