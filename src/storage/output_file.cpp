#include "storage/output_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <mutex>
#include <random>
#include <set>
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

// The parts of a temporary's name around the final name and the pid; temporary_target() takes
// them apart again.
constexpr std::string_view kMarker = ".tensorstream-";
constexpr std::string_view kExtension = ".tmp";
constexpr std::size_t kRandomDigits = 16;

// ".<name>.tensorstream-<pid>-<random>.tmp" beside `path`: the pid and 64 random bits keep it
// apart from the temporaries of other writers, the leading dot and the suffix from the names of
// the files being written.
std::filesystem::path temporary_name(const std::filesystem::path& path) {
  thread_local std::mt19937_64 random{std::random_device{}()};
  char random_digits[kRandomDigits + 1];
  std::snprintf(random_digits, sizeof random_digits, "%016llx",
                static_cast<unsigned long long>(random()));
  std::string name = ".";
  name += path.filename().string().substr(0, kNameRoom);
  name += kMarker;
  name += std::to_string(::getpid());
  name += '-';
  name += random_digits;
  name += kExtension;
  return path.parent_path() / name;
}

bool all_digits(std::string_view text, bool hexadecimal) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (hexadecimal ? std::isxdigit(byte) : std::isdigit(byte)) != 0;
  });
}

// The temporaries of the OutputFiles alive and not committed, for remove_output_temporaries().
// Made once and never destroyed: an OutputFile may outlive static destruction.
struct LiveTemporaries {
  std::mutex mutex;
  std::set<std::filesystem::path> paths;
  bool removed = false;
};

LiveTemporaries& live_temporaries() {
  static auto* const temporaries = new LiveTemporaries;
  return *temporaries;
}

void forget_temporary(const std::filesystem::path& temporary) {
  LiveTemporaries& live = live_temporaries();
  const std::lock_guard lock(live.mutex);
  live.paths.erase(temporary);
}

}  // namespace

void remove_output_temporaries() {
  LiveTemporaries& live = live_temporaries();
  const std::lock_guard lock(live.mutex);
  live.removed = true;
  for (const auto& temporary : live.paths) ::unlink(temporary.c_str());
  live.paths.clear();
}

std::optional<std::string> temporary_target(std::string_view file_name) {
  if (!file_name.starts_with('.') || !file_name.ends_with(kExtension)) return std::nullopt;
  std::string_view rest = file_name.substr(1, file_name.size() - 1 - kExtension.size());
  // "<name>.tensorstream-<pid>-<random>"; the name itself may contain the marker.
  const auto dash = rest.rfind('-');
  if (dash == std::string_view::npos || rest.size() - dash - 1 != kRandomDigits ||
      !all_digits(rest.substr(dash + 1), true)) {
    return std::nullopt;
  }
  rest = rest.substr(0, dash);
  const auto marker = rest.rfind(kMarker);
  if (marker == std::string_view::npos || marker == 0 ||
      !all_digits(rest.substr(marker + kMarker.size()), false)) {
    return std::nullopt;
  }
  return std::string(rest.substr(0, marker));
}

OutputFile::OutputFile(std::filesystem::path path) : path_(std::move(path)) {
  LiveTemporaries& live = live_temporaries();
  const std::lock_guard lock(live.mutex);
  if (live.removed) {
    throw StorageError(path_.string(), "not written: the process is ending at a signal");
  }
  for (int attempt = 0; attempt < kNameAttempts; ++attempt) {
    temporary_ = temporary_name(path_);
    // O_EXCL: an existing file of that name belongs to someone else and stays untouched.
    fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd_ >= 0 || errno != EEXIST) break;
  }
  if (fd_ < 0) fail(path_, "cannot create " + temporary_.string(), errno);
  live.paths.insert(temporary_);
}

OutputFile::OutputFile(OutputFile&& other) noexcept
    : path_(std::move(other.path_)),
      temporary_(std::move(other.temporary_)),
      fd_(std::exchange(other.fd_, -1)),
      committed_(std::exchange(other.committed_, true)) {}

OutputFile::~OutputFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) {
    ::unlink(temporary_.c_str());
    forget_temporary(temporary_);
  }
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
  forget_temporary(temporary_);
}

}  // namespace tensorstream::detail
