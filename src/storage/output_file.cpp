#include "storage/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <random>
#include <string>
#include <system_error>
#include <utility>

#include "tensorstream/error.hpp"

namespace tensorstream::detail {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& what, int error) {
  throw StorageError(path.string(), what + ": " + std::system_category().message(error));
}

// Room left in a file name (NAME_MAX is 255 on Linux file systems) for the final name after the
// temporary name's own parts.
constexpr std::size_t kNameRoom = 200;
// Fresh names tried before giving up, should an old temporary hold each of them.
constexpr int kNameAttempts = 16;

// ".<name>.tensorstream-<pid>-<random>.tmp" beside `path`: the pid and 64 random bits keep it
// apart from the temporaries of other writers, the leading dot and the suffix from the names of
// the files being written.
std::filesystem::path temporary_name(const std::filesystem::path& path) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, ".tensorstream-%ld-%016llx.tmp",
                static_cast<long>(::getpid()), static_cast<unsigned long long>(random()));
  const std::string name = path.filename().string();
  return path.parent_path() / ("." + name.substr(0, kNameRoom) + suffix);
}

}  // namespace

OutputFile::OutputFile(std::filesystem::path path) : path_(std::move(path)) {
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    temporary_ = temporary_name(path_);
    // O_EXCL: an existing file of that name belongs to someone else and stays untouched.
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) fail(path_, "cannot create " + temporary_.string(), errno);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temporary_.c_str());
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
  // Without fsync a crash after the rename can leave the new name pointing at missing data.
  if (::fsync(fd_) != 0) fail(path_, "fsync failed", errno);
  if (::close(std::exchange(fd_, -1)) != 0) fail(path_, "write failed", errno);
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    fail(path_, "cannot rename " + temporary_.string() + " into place", errno);
  }
  committed_ = true;
}

}  // namespace tensorstream::detail
