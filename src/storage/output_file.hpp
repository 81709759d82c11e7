#pragma once
// A file written at arbitrary positions that appears under its name only once complete.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tensorstream::detail {

/// Writes a new temporary file in the directory of `path`, renamed to `path` by commit() and
/// removed instead if destroyed before. The temporary is named
/// `.<name>.tensorstream-<pid>-<random>.tmp` and created exclusively, so it never truncates or
/// replaces another file: not one a key of the same listing names (such as `<name>.partial`),
/// nor another writer's temporary. Failures throw StorageError naming `path`.
class OutputFile {
 public:
  /// Creates the temporary file.
  explicit OutputFile(std::filesystem::path path);
  ~OutputFile();
  OutputFile(OutputFile&& other) noexcept;
  OutputFile& operator=(OutputFile&&) = delete;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Writes all of `bytes` at byte `offset` of the file.
  void write_at(std::uint64_t offset, std::span<const std::byte> bytes);

  /// Flushes the file to disk (fsync), closes it and renames it to its final name.
  void commit();

  /// The final name.
  const std::filesystem::path& path() const { return path_; }

  /// The temporary name the bytes are written to until commit().
  const std::filesystem::path& temporary() const { return temporary_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  bool committed_ = false;
};

/// Removes the temporary of every OutputFile of this process not yet committed or destroyed, and
/// makes every later OutputFile fail to be created: for a process about to be ended by a signal,
/// which runs no destructors. Thread-safe; not async-signal-safe.
void remove_output_temporaries();

/// The final name of the OutputFile temporary named `file_name`
/// (".<name>.tensorstream-<pid>-<16 hex digits>.tmp" gives "<name>", of which a temporary keeps
/// the first 200 bytes), or nullopt when `file_name` is not one.
std::optional<std::string> temporary_target(std::string_view file_name);

}  // namespace tensorstream::detail
