#pragma once
/// @file
/// Options of the file:// backend, FileStore. Each backend's options are named after it:
/// FileOptions, HttpOptions, S3Options, GcsOptions, gathered in StoreOptions.

#include <cstddef>

namespace tensorstream {

/// Tuning of FileStore.
struct FileOptions {
  /// Read through io_uring when the kernel allows it. The environment variable
  /// `TENSORSTREAM_DISABLE_IO_URING=1` (any value but empty or "0") has the effect of `false`.
  bool use_io_uring = true;
  /// Reads in flight in the io_uring ring (its submission queue size); more wait in line.
  unsigned queue_depth = 128;
  /// Threads that run blocking pread calls when io_uring is not used.
  std::size_t pread_threads = 2;
};

}  // namespace tensorstream
