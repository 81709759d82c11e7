#pragma once
// The file:// ObjectWriter: a hidden temporary beside the file, fsynced and renamed on commit.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "storage/output_file.hpp"
#include "tensorstream/storage/object_writer.hpp"

namespace tensorstream {

/// Writes the file `path` through an OutputFile, creating missing parent directories first.
/// Writes are plain write(2) calls, which the page cache mostly absorbs; the one fsync runs in
/// commit(). Each write, the commit (fsync, close, rename) and abort's removal runs on a thread
/// of its own (async::run_on_thread) while the caller awaits it: the caller's thread is a store's
/// I/O thread, whose other requests would otherwise stall into their timeouts behind a slow disk
/// or NFS server (an fsync of gigabytes takes seconds). The caller awaits each call before the
/// next, so writes stay in order and the writer holds none of their bytes; a thread per call
/// costs tens of microseconds beside a chunk's write. The constructor (directories, the
/// temporary's creation) and the destructor (an uncommitted temporary's removal) run on the
/// caller's thread.
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

  // Runs `work` on the open temporary on a thread of its own; a StorageError removes the
  // temporary there too, since a failed writer is aborted.
  boost::asio::awaitable<void> run_blocking(std::function<void(detail::OutputFile&)> work);

  std::string url_;
  std::optional<detail::OutputFile> file_;
  std::uint64_t size_ = 0;
  bool committed_ = false;
};

}  // namespace tensorstream
