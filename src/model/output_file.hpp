#pragma once
// A file written at arbitrary positions that appears under its name only once complete.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>

namespace tensorstream::detail {

/// Writes `<path>.partial`, renamed to `path` by commit(); removed instead if destroyed before.
/// Failures throw StorageError naming `path`.
class OutputFile {
 public:
  /// Creates (or truncates) `<path>.partial`.
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Writes all of `bytes` at byte `offset` of the file.
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes);

  /// Closes the file and renames it to its final name.
  void commit();

  /// The final name.
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path partial_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace tensorstream::detail
