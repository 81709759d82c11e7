#pragma once
/// @file
/// Options of the file:// backend, FileStore. Each backend's options are named after it:
/// FileOptions, HttpOptions, S3Options, GcsOptions, gathered in StoreOptions.

#include <cstddef>
#include <optional>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// When FileStore reads a file with direct I/O (O_DIRECT): from the device into the destination,
/// past the page cache. That saves the kernel's copy and its page-cache bookkeeping where the
/// bytes are not cached anyway, and leaves the cache to what else the machine runs; where they
/// are cached, reading them from the device again would be slower.
enum class DirectIo {
  automatic,  ///< "auto": for a file less than half of which is in the page cache when opened.
  on,         ///< For every file whose file system allows direct I/O.
  off,        ///< Never.
};

/// The mode a name of the CLI's `--direct-io` and `TENSORSTREAM_DIRECT_IO` gives: "auto", "on"
/// or "off"; nullopt for any other.
TENSORSTREAM_API std::optional<DirectIo> parse_direct_io(std::string_view name);

/// "auto", "on" or "off".
TENSORSTREAM_API std::string_view direct_io_name(DirectIo mode);

/// Tuning of FileStore.
struct FileOptions {
  /// Read through io_uring when the kernel allows it. The environment variable
  /// `TENSORSTREAM_DISABLE_IO_URING=1` (any value but empty or "0") has the effect of `false`.
  bool use_io_uring = true;
  /// Reads in flight in the io_uring ring (its submission queue size); more wait in line.
  unsigned queue_depth = 128;
  /// Threads that run blocking pread calls when io_uring is not used.
  std::size_t pread_threads = 2;
  /// When to read with direct I/O; unset: as `TENSORSTREAM_DIRECT_IO` says (auto, on or off),
  /// else DirectIo::automatic.
  std::optional<DirectIo> direct_io;
};

}  // namespace tensorstream
