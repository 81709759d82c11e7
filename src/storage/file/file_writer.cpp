#include "storage/file/file_writer.hpp"

#include <system_error>
#include <utility>

#include "async/run_on_thread.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

std::filesystem::path with_parents(std::filesystem::path path) {
  // A bare name ("out1") is in the working directory, which needs no creating.
  if (path.parent_path().empty()) return path;
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  if (error) {
    throw StorageError(path.string(), "cannot create directory " +
                                          path.parent_path().string() + ": " + error.message());
  }
  return path;
}

}  // namespace

FileWriter::FileWriter(std::filesystem::path path)
    : url_(path.string()), file_(std::in_place, with_parents(std::move(path))) {}

FileWriter::~FileWriter() {
  if (file_) log(LogLevel::warning, url_ + ": writer destroyed before commit; file not written");
}

detail::OutputFile& FileWriter::open_file() {
  if (!file_) {
    throw StateError(url_ + (committed_ ? ": already committed" : ": writer was aborted"));
  }
  return *file_;
}

boost::asio::awaitable<void> FileWriter::run_blocking(
    std::function<void(detail::OutputFile&)> work) {
  detail::OutputFile& file = open_file();
  auto running = async::run_on_thread([this, &file, work = std::move(work)] {
    try {
      work(file);
    } catch (const StorageError&) {
      file_.reset();
      throw;
    }
  });
  co_await std::move(running);
}

boost::asio::awaitable<void> FileWriter::write(std::span<const std::byte> bytes) {
  auto writing = run_blocking(
      [offset = size_, bytes](detail::OutputFile& file) { file.write_at(offset, bytes); });
  co_await std::move(writing);
  size_ += bytes.size();
}

boost::asio::awaitable<void> FileWriter::commit() {
  auto committing = run_blocking([](detail::OutputFile& file) { file.commit(); });
  co_await std::move(committing);
  file_.reset();
  committed_ = true;
}

boost::asio::awaitable<void> FileWriter::abort() {
  if (!file_) co_return;
  // The temporary goes with the OutputFile, whose close may flush (NFS's does) as a write would.
  auto removing = async::run_on_thread([this] { file_.reset(); });
  co_await std::move(removing);
}

}  // namespace tensorstream
