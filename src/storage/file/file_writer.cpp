#include "storage/file/file_writer.hpp"

#include <system_error>
#include <utility>

#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

std::filesystem::path with_parents(std::filesystem::path path) {
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

boost::asio::awaitable<void> FileWriter::write(std::span<const std::byte> bytes) {
  try {
    open_file().write_at(size_, bytes);
  } catch (const StorageError&) {
    file_.reset();
    throw;
  }
  size_ += bytes.size();
  co_return;
}

boost::asio::awaitable<void> FileWriter::commit() {
  try {
    open_file().commit();
  } catch (const StorageError&) {
    file_.reset();
    throw;
  }
  file_.reset();
  committed_ = true;
  co_return;
}

boost::asio::awaitable<void> FileWriter::abort() {
  // The temporary goes with the OutputFile.
  file_.reset();
  co_return;
}

}  // namespace tensorstream
