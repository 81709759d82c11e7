#pragma once
// The process's limit of open file descriptors, which every connection counts against.

#include <sys/resource.h>

namespace tensorstream {

/// Raises the soft RLIMIT_NOFILE to the hard limit where the system allows
/// it; many concurrent connections per host need more than the common default of 1024. Returns
/// the soft limit now in force (RLIM_INFINITY when unlimited, 0 when it cannot be read).
rlim_t raise_open_file_limit();

}  // namespace tensorstream
