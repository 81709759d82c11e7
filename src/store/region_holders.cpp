#include "store/region_holders.hpp"

#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "tensorstream/error.hpp"

namespace tensorstream::store::detail {
namespace {

enum class Holding { yes, no, unknown };

// Whether `pid`'s mappings include a memfd with inode `inode`; unknown where its maps cannot be
// opened (another user's process, or one gone). A maps line is "START-END PERMS OFFSET DEV INODE
// PATH", the path of a memfd "/memfd:NAME (deleted)".
Holding maps_region(pid_t pid, ino_t inode) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  if (!maps) return Holding::unknown;
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, permissions, offset, device, path;
    ino_t mapped = 0;
    if (!(fields >> range >> permissions >> offset >> device >> mapped >> path)) continue;
    if (mapped == inode && path.starts_with("/memfd:")) return Holding::yes;
  }
  return Holding::no;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

}  // namespace

RegionHolders::RegionHolders(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw StorageError("a region's memfd", std::strerror(errno));
  inode_ = status.st_ino;
}

void RegionHolders::add(pid_t pid) { pids_.insert(pid); }

std::size_t RegionHolders::count_live() {
  std::erase_if(pids_, [this](pid_t pid) {
    const Holding holding = maps_region(pid, inode_);
    return holding == Holding::no || (holding == Holding::unknown && !alive(pid));
  });
  return pids_.size();
}

}  // namespace tensorstream::store::detail
