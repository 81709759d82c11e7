#pragma once
/// @file
/// Options of a stream.

#include <cstddef>
#include <cstdint>

#include "tensorstream/storage/store_options.hpp"

namespace tensorstream {

/// Options of SafeTensorsStreamer and RawStreamer. The defaults match the Python original.
struct StreamerOptions {
  /// Bytes per range read; each tensor is split into reads of at most this size.
  std::uint64_t chunk_size = 16ull << 20;
  /// Range reads in flight at once, across all files.
  std::size_t max_concurrency = 32;
  /// This process's tensor-parallel rank, in [0, tensor_parallel_size).
  int rank = 0;
  /// With more than one, the rank's files `model-rank-{rank}-part-*.safetensors` are streamed.
  int tensor_parallel_size = 1;
  /// Bytes of tensor memory allocated and not yet released, in flight or yielded and still alive.
  /// A slow consumer stalls the downloads instead of growing memory. A tensor larger than the
  /// limit is loaded alone, when nothing else is held. Memory of released tensors is reused for
  /// later ones within this limit, so a window well below the model's size (the default) streams
  /// faster than mapping fresh memory for every tensor; a consumer that keeps every tensor needs a
  /// limit above the model's size.
  std::uint64_t memory_limit = 512ull << 20;
  /// Threads running the stream's network and file I/O.
  std::size_t io_threads = 2;
  /// Options of the backends.
  StoreOptions store;
};

}  // namespace tensorstream
