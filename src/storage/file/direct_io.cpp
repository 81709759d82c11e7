#include "storage/file/direct_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <vector>

#include "environment_setting.hpp"
#include "storage/errno_code.hpp"
#include "storage/file/read_pieces.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

// mincore() takes a byte per page; windows of this many bytes bound that vector to 256 KiB.
constexpr std::uint64_t kResidencyWindow = std::uint64_t{1} << 30;

// Whether at least half of the file's pages are in the page cache. A file that cannot be mapped
// counts as cached, so that direct I/O is only chosen where it is known to help.
bool mostly_cached(int fd, std::uint64_t size) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident;
  std::uint64_t cached_pages = 0;
  for (std::uint64_t at = 0; at < size; at += kResidencyWindow) {
    const std::uint64_t length = std::min(kResidencyWindow, size - at);
    void* mapping = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, static_cast<off_t>(at));
    if (mapping == MAP_FAILED) return true;
    resident.resize((length + page - 1) / page);
    const int rc = ::mincore(mapping, length, resident.data());
    ::munmap(mapping, length);
    if (rc != 0) return true;
    cached_pages += static_cast<std::uint64_t>(
        std::count_if(resident.begin(), resident.end(), [](unsigned char bits) { return bits & 1; }));
  }
  return cached_pages * 2 >= (size + page - 1) / page;
}

// Whether the file system asks for no coarser alignment than kDirectAlignment, where it says
// (statx's STATX_DIOALIGN, Linux 6.1); where it does not, a refused read tells.
bool alignment_suffices(int fd) {
  struct statx status {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &status) != 0) return true;
  if ((status.stx_mask & STATX_DIOALIGN) == 0) return true;
  const auto fits = [](std::uint32_t alignment) {
    return alignment != 0 && kDirectAlignment % alignment == 0;
  };
  return fits(status.stx_dio_mem_align) && fits(status.stx_dio_offset_align);
}

}  // namespace

std::optional<DirectIo> parse_direct_io(std::string_view name) {
  if (name == "auto") return DirectIo::automatic;
  if (name == "on") return DirectIo::on;
  if (name == "off") return DirectIo::off;
  return std::nullopt;
}

std::string_view direct_io_name(DirectIo mode) {
  switch (mode) {
    case DirectIo::automatic:
      return "auto";
    case DirectIo::on:
      return "on";
    case DirectIo::off:
      return "off";
  }
  return "auto";
}

DirectIo resolve_direct_io(std::optional<DirectIo> option) {
  if (option) return *option;
  const auto setting = detail::environment_setting("DIRECT_IO");
  if (!setting) return DirectIo::automatic;
  if (const auto mode = parse_direct_io(setting->value)) return *mode;
  throw InvalidArgument(setting->variable + "='" + setting->value +
                        "' is not auto, on or off");
}

int open_direct(const std::string& path, int fd, DirectIo mode) {
  if (mode == DirectIo::off) return -1;
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_size == 0) return -1;
  if (mode == DirectIo::automatic && mostly_cached(fd, static_cast<std::uint64_t>(status.st_size))) {
    return -1;
  }
  if (!alignment_suffices(fd)) {
    log(LogLevel::debug, path + ": direct I/O needs coarser alignment than " +
                             std::to_string(kDirectAlignment) +
                             " bytes; reading through the page cache");
    return -1;
  }
  const int direct_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  if (direct_fd < 0) {
    log(LogLevel::debug, path + ": the file system refuses direct I/O (" +
                             errno_code(errno).message() + "); reading through the page cache");
    return -1;
  }
  // The path may name another file by now; only the one already open may be read.
  struct stat direct_status {};
  if (::fstat(direct_fd, &direct_status) != 0 || direct_status.st_dev != status.st_dev ||
      direct_status.st_ino != status.st_ino) {
    ::close(direct_fd);
    return -1;
  }
  return direct_fd;
}

}  // namespace tensorstream
