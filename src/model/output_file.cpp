#include "model/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
  throw StorageError(path.string(), what + ": " + std::system_category().message(error));
}

}  // namespace

OutputFile::OutputFile(std::filesystem::path path) : path_(std::move(path)), partial_(path_) {
  partial_ += ".partial";
  fd_ = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, "cannot create " + partial_.string(), errno);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      partial_(std::move(other.partial_)),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(partial_.c_str());
}

void OutputFile::write_at(std::uint64_t offset, std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const auto written = ::pwrite(fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (written < 0) {
      if (errno == EINTR) continue;
      fail(path_, "write failed", errno);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(written));
    offset += static_cast<std::uint64_t>(written);
  }
}

void OutputFile::commit() {
  if (::close(std::exchange(fd_, -1)) != 0) fail(path_, "write failed", errno);
  if (::rename(partial_.c_str(), path_.c_str()) != 0) {
    fail(path_, "cannot rename " + partial_.string() + " into place", errno);
  }
  committed_ = true;
}

}  // namespace tensorstream::detail
