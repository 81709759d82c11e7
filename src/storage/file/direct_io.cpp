#include "storage/file/direct_io.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

#include "base/environment_setting.hpp"
#include "storage/errno_code.hpp"
#include "storage/file/read_pieces.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {
namespace {

// Pages sampled to estimate how much of a file is cached. Asking for every page costs a page
// cache lookup each, which for a 2 GiB file took longer than copying a tenth of it; 256 evenly
// spread pages tell whether most of the file is cached to within a few percent.
constexpr std::uint64_t kResidencySamples = 256;

// A window of the file mapped at a time: under an address-space limit (ulimit -v, as batch
// schedulers set) a whole checkpoint may not fit.
constexpr std::uint64_t kResidencyWindow = std::uint64_t{1} << 30;

// Whether at least half of the sampled pages of the file are in the page cache. A file that
// cannot be mapped counts as cached, so that direct I/O is only chosen where it is known to help.
bool mostly_cached(int fd, std::uint64_t size) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  const std::uint64_t pages = (size + page - 1) / page;
  const std::uint64_t samples = std::min(pages, kResidencySamples);
  void* window = MAP_FAILED;
  std::uint64_t window_begin = 0;
  std::uint64_t window_length = 0;
  std::uint64_t cached = 0;
  bool known = true;
  for (std::uint64_t sample = 0; sample < samples && known; ++sample) {
    // The middle page of each of `samples` equal stretches of the file; they only move forward.
    const std::uint64_t at = (2 * sample + 1) * pages / (2 * samples) * page;
    if (window == MAP_FAILED || at >= window_begin + window_length) {
      if (window != MAP_FAILED) ::munmap(window, window_length);
      window_begin = at / kResidencyWindow * kResidencyWindow;
      window_length = std::min(kResidencyWindow, size - window_begin);
      window = ::mmap(nullptr, window_length, PROT_READ, MAP_SHARED, fd,
                      static_cast<off_t>(window_begin));
      if (window == MAP_FAILED) return true;
    }
    unsigned char resident = 0;
    known = ::mincore(static_cast<char*>(window) + (at - window_begin), 1, &resident) == 0;
    cached += resident & 1;
  }
  if (window != MAP_FAILED) ::munmap(window, window_length);
  return !known || cached * 2 >= samples;
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
