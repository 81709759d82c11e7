#pragma once
// Which worker processes still hold a region the server handed out. A worker closes the region's
// descriptor once mapped and its connection once answered, so the server cannot count replies
// as workers: it asks the kernel which of the processes it answered still map the region.

#include <sys/types.h>

#include <cstddef>
#include <set>

namespace tensorstream::store::detail {

/// The processes an attach handed one region (a memfd) to, and how many of them still map it.
class RegionHolders {
 public:
  /// Takes the identity of the memfd `fd` (its inode), which outlives the descriptor.
  explicit RegionHolders(int fd);

  /// Records that process `pid` was handed the region.
  void add(pid_t pid);

  /// The processes recorded that still map the region: /proc/PID/maps lists its inode; where
  /// that cannot be read (a process of another user), while the process lives. Forgets the
  /// others, so that a reused pid is never counted.
  std::size_t count_live();

 private:
  ino_t inode_ = 0;
  std::set<pid_t> pids_;
};

}  // namespace tensorstream::store::detail
