#pragma once
// The file:// ObjectWriter: a hidden temporary beside the file, fsynced and renamed on commit.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "storage/output_file.hpp"
#include "tensorstream/storage/object_writer.hpp"

namespace tensorstream {

/// Writes the file `path` through an OutputFile, creating missing parent directories first.
/// Writes are plain write(2) calls on the calling thread: the page cache absorbs them, and the
/// one fsync runs in commit().
class FileWriter final : public ObjectWriter {
 public:
  /// Creates the parent directories and the temporary. @throws StorageError naming `path`.
  explicit FileWriter(std::filesystem::path path);
  ~FileWriter() override;

  const std::string& url() const override { return url_; }
  boost::asio::awaitable<void> write(std::span<const std::byte> bytes) override;
  boost::asio::awaitable<void> commit() override;
  boost::asio::awaitable<void> abort() override;

 private:
  // The open temporary; empty once committed or aborted.
  detail::OutputFile& open_file();

  std::string url_;
  std::optional<detail::OutputFile> file_;
  std::uint64_t size_ = 0;
  bool committed_ = false;
};

}  // namespace tensorstream
