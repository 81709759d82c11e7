#pragma once
/// @file
/// What a stream did, for logs, the CLI and benchmarks.

#include <cstdint>
#include <string>

namespace tensorstream {

/// A snapshot of a stream's counters.
struct StreamStats {
  std::uint64_t files = 0;            ///< Objects streamed: safetensors files, TRAW objects.
  std::uint64_t tensors = 0;          ///< Tensors yielded so far.
  std::uint64_t total_tensors = 0;    ///< Tensors the stream will yield (0 until headers are read).
  /// Tensor bytes landed so far, counted as they arrive where the store counts them so (http,
  /// s3, gs: read by read), else as each chunk completes (files).
  std::uint64_t bytes = 0;
  std::uint64_t total_bytes = 0;      ///< Tensor bytes the stream will load (0 until headers are read).
  double elapsed_seconds = 0;         ///< Since the stream started (until it finished).
  double first_tensor_seconds = -1;   ///< From the start to the first tensor ready; -1 before.
  std::uint64_t requests = 0;         ///< Requests sent to the store.
  /// Bytes read from files with direct I/O, past the page cache (FileOptions::direct_io).
  std::uint64_t direct_bytes = 0;
  /// Bytes read from the local cache (CacheOptions) and from the source, headers included: with
  /// a cache, the source's share is what the load fetched.
  std::uint64_t cached_bytes = 0;
  std::uint64_t source_bytes = 0;  ///< See cached_bytes.
  std::uint64_t retries = 0;          ///< Requests repeated after transient failures.
  std::uint64_t connections = 0;      ///< Network connections opened.
  std::uint64_t tls_resumed = 0;      ///< Of those, TLS connections that resumed a session.
  std::uint64_t peak_memory = 0;      ///< Most tensor bytes held at once.
  /// Bytes of new memory mappings tensors (of 1 MiB or more) landed in: pages the kernel faults
  /// in and zeroes. The rest landed in memory of tensors the consumer released, recycled; a
  /// consumer that releases tensors as it goes keeps this near the memory limit.
  std::uint64_t fresh_memory = 0;
  std::string io_mode;                ///< How the store reads, e.g. "io_uring", "http", "https".
  /// Bytes per range read: StreamerOptions::chunk_size, raised to the store's
  /// ObjectStore::preferred_read_size() where nothing chose it.
  std::uint64_t chunk_size = 0;
  /// What the request that has waited longest for its server waits for, "a response from
  /// HOST", and for how many seconds so far; empty and 0 while none waits (StoreStats).
  std::string waiting_for{};
  double waiting_seconds = 0;
  /// Processes streaming together (StreamerOptions::distributed), 1 for a stream of its own.
  int group_size = 1;
  /// Of `bytes`, those broadcast by other members of the group rather than read from the store.
  std::uint64_t broadcast_bytes = 0;

  /// Tensor bytes per second over the elapsed time, in GB/s (10^9 bytes).
  double gigabytes_per_second() const {
    return elapsed_seconds > 0 ? static_cast<double>(bytes) / elapsed_seconds / 1e9 : 0.0;
  }
};

}  // namespace tensorstream
