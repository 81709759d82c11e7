#pragma once
/// @file
/// Options of a stream.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tensorstream/distributed/distributed_options.hpp"
#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/header.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace tensorstream {

/// The order in which a stream reserves memory for its reads and starts them.
enum class ReadOrder {
  /// Smallest read first, ties in file order: the first tensors are ready within a round trip or
  /// two. Tensors complete in any order.
  smallest_first,
  /// Files in stream order, each file's tensors by offset. Tensors still complete in any order,
  /// but each one's memory is reserved only after that of every tensor before it.
  file_order,
};

/// What StreamerOptions::memory_limit bounds.
enum class MemoryAccounting {
  /// The memory the stream holds: reads in flight, and tensors delivered but not yet taken by
  /// next(). A tensor stops counting when the consumer takes it, so a consumer may keep every
  /// tensor; one that releases them still gets their memory recycled for later reads.
  stream,
  /// Also every yielded tensor until it (and every view of it) is released: one hard cap on
  /// tensor memory. A consumer that keeps tensors until the limit is full gets an Error saying
  /// so instead of waiting forever.
  until_released,
};

/// Where a stream lands a tensor instead of memory of its own: `tensor.byte_size()` writable
/// bytes, aligned for the tensor's dtype (in a shared-memory region, pinned memory), or nullptr
/// for the stream's own memory. Called on the stream's planning thread, once per tensor, with the
/// URL of the file it comes from.
///
/// The stream holds the pointer it gets for as long as bytes may still be written there, and
/// with it whatever the pointer shares ownership of: give one that owns the memory, or shares
/// its owner through the aliasing constructor, `std::shared_ptr<std::byte>(region, address)`.
/// That time can outlast the streamer: a distributed stream that fails or is destroyed waits for
/// its broadcasts in flight only up to the group's timeout, and a broadcast still landing after
/// that keeps the memory alive until it ends.
using TensorPlacement =
    std::function<std::shared_ptr<std::byte>(const TensorInfo& tensor, const std::string& object)>;

/// Which tensors a stream loads: true to load `tensor` of the object at URL `object`. Called on
/// the stream's planning thread once per tensor, after the headers are read and an index's
/// selection is applied, in stream order (files in order, each file's tensors by offset).
using TensorSelection =
    std::function<bool(const TensorInfo& tensor, const std::string& object)>;

/// Options of SafeTensorsStreamer and RawStreamer. The defaults match the Python original.
///
/// `chunk_size` and `max_concurrency`, when left unset, come from the environment as the Python
/// original's do (environment_streamer_options(), read once per streamer): an explicit value
/// beats `TENSORSTREAM_*`, which beats `FLYTE_MODEL_LOADER_*`, which beats the default.
struct StreamerOptions {
  /// Bytes per range read; each tensor is split into reads of at most this size. 16 MiB unless
  /// set here or in TENSORSTREAM_CHUNK_SIZE / FLYTE_MODEL_LOADER_CHUNK_SIZE, or raised to what
  /// the store prefers (ObjectStore::preferred_read_size(): 64 MiB for az://) when neither sets
  /// it; StreamStats::chunk_size says what a stream used.
  std::optional<std::uint64_t> chunk_size;
  /// Range reads in flight at once, across all files. 32 unless set here or in
  /// TENSORSTREAM_MAX_CONCURRENCY / FLYTE_MODEL_LOADER_MAX_CONCURRENCY.
  std::optional<std::size_t> max_concurrency;
  /// This process's tensor-parallel rank, in [0, tensor_parallel_size).
  int rank = 0;
  /// With more than one, the rank's files `model-rank-{rank}-part-*.safetensors` are streamed. A
  /// prefix holding TRAW partitions `TP{n}/shard{r}/` needs it set: it selects
  /// `TP{tensor_parallel_size}/shard{rank}/`. Unset streams as 1 otherwise.
  std::optional<int> tensor_parallel_size;
  /// Bytes of tensor memory the stream may hold at once (see memory_accounting for what counts).
  /// A slow consumer stalls the downloads instead of growing memory. A tensor larger than the
  /// limit is loaded alone, when nothing else is held. Memory of released tensors is reused for
  /// later ones within this limit, so a window well below the model's size (the default) streams
  /// faster than mapping fresh memory for every tensor.
  std::uint64_t memory_limit = 512ull << 20;
  /// What memory_limit counts: by default what the stream holds, so that a consumer keeping
  /// every tensor works whatever the model's size; MemoryAccounting::until_released makes it a
  /// hard cap on all tensor memory, kept tensors included.
  MemoryAccounting memory_accounting = MemoryAccounting::stream;
  /// How reads are ordered. With ReadOrder::file_order, a consumer that must use tensors in file
  /// order (writing them out sequentially) may keep the tensors that arrive before their
  /// predecessors and wait for those: the stream reserves memory strictly in plan order, so every
  /// predecessor of a kept tensor already has its memory and completes without needing any
  /// released. Such a reorder buffer therefore never stalls on memory_limit, whatever the limit;
  /// it holds at most memory_limit bytes (or one larger tensor).
  ReadOrder read_order = ReadOrder::smallest_first;
  /// Where tensors land; unset, each gets memory of the stream's own. A placed tensor's bytes are
  /// read straight into the given memory, which does not count towards memory_limit; the yielded
  /// StreamedTensor points into it and shares its ownership. Small tensors read together with
  /// their neighbours are still copied out of a shared read.
  TensorPlacement placement{};
  /// Which tensors to load; unset, every one. Only selected tensors' bytes are requested, a file
  /// left with none is not read beyond its header, and the stream's totals count only these.
  TensorSelection select{};
  /// Threads running the stream's network and file I/O.
  std::size_t io_threads = 2;
  /// Options of the backends.
  StoreOptions store;
  /// Read once, broadcast to all: the processes that stream this checkpoint together, each
  /// reading a share and receiving the rest from the others (see DistributedOptions). By
  /// default the stream reads every tensor itself.
  DistributedOptions distributed;
};

/// StreamerOptions::chunk_size where neither the options nor the environment set it.
inline constexpr std::uint64_t default_chunk_size = 16ull << 20;
/// StreamerOptions::max_concurrency where neither the options nor the environment set it.
inline constexpr std::size_t default_max_concurrency = 32;

/// `explicit_options` with `chunk_size` and `max_concurrency`, where it leaves them unset, taken
/// from `TENSORSTREAM_CHUNK_SIZE` / `TENSORSTREAM_MAX_CONCURRENCY`, else their
/// `FLYTE_MODEL_LOADER_*` twins, else the defaults above; both are set in the result. Throws
/// InvalidArgument naming the variable and its value when it is not a positive decimal integer.
TENSORSTREAM_API
StreamerOptions environment_streamer_options(StreamerOptions explicit_options = {});

}  // namespace tensorstream
