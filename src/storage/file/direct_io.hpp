#pragma once
// Whether a file is read with direct I/O, decided once when the store opens it.

#include <string>

#include "tensorstream/storage/file_options.hpp"

namespace tensorstream {

/// The mode `option` or else TENSORSTREAM_DIRECT_IO gives, else DirectIo::automatic.
/// InvalidArgument naming the variable for a value other than auto, on or off.
DirectIo resolve_direct_io(std::optional<DirectIo> option);

/// A descriptor of the regular file `fd` (opened from `path`) with O_DIRECT, where `mode` says to
/// read it so (automatic: less than half of its pages are cached) and the file system allows it;
/// else -1. A file system that refuses (procfs; tmpfs before Linux 6.6) or that needs coarser
/// alignment than kDirectAlignment is logged at debug level.
int open_direct(const std::string& path, int fd, DirectIo mode);

}  // namespace tensorstream
