#pragma once
/// @file
/// Cutting a checkpoint for several tensor-parallel sizes at once and writing each rank's part as
/// its own objects: what `tensorstream partition` does, the offline half of the seed's
/// TensorStore.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/model/head_config.hpp"
#include "tensorstream/storage/object_writer.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// How each rank's tensors are stored.
enum class PartitionFormat {
  /// One TRAW object per tensor: `TP{n}/shard{r}/<tensor name>.bin` (see traw/format.hpp).
  traw,
  /// One safetensors file per rank: `TP{n}/shard{r}/model.safetensors`, tensors in the source's
  /// order.
  safetensors,
};

/// Counters of a partition run, for progress displays. Totals are known once the source's
/// headers are read.
struct PartitionProgress {
  std::uint64_t bytes_read = 0;       ///< Tensor bytes of the source received.
  std::uint64_t bytes_to_read = 0;    ///< Tensor bytes of the source.
  std::uint64_t bytes_written = 0;    ///< Bytes handed to the destination's writers.
  std::uint64_t bytes_to_write = 0;   ///< Bytes of every object the run writes (weights only).
  std::size_t tensors_done = 0;       ///< Source tensors written to every rank.
  std::size_t tensors = 0;            ///< Source tensors.
  std::size_t objects_written = 0;    ///< Weight objects committed.
  std::size_t objects = 0;            ///< Weight objects the run writes.
  /// Of the requests of the source and the destination waiting for their server, the one that
  /// has waited longest: what for ("a response from HOST") and for how many seconds so far, as
  /// StoreStats::waiting_for says; empty and 0 while none waits.
  std::string waiting_for{};
  double waiting_seconds = 0;
};

/// Options of partition_checkpoint().
struct PartitionOptions {
  /// The tensor-parallel sizes to write, each at least 1, no repeats.
  std::vector<int> tensor_parallel_sizes{1, 2, 4, 8};
  /// How ranks' tensors are stored.
  PartitionFormat format = PartitionFormat::traw;
  /// Replaces `num_key_value_heads` of the source's config.json.
  std::optional<std::int64_t> num_key_value_heads{};
  /// Write into a destination that already holds objects, replacing those of the same names
  /// (others stay). Without it such a destination is an error, raised before anything is read.
  bool overwrite = false;
  /// Before writing, remove what writers killed in an earlier run left under the destination
  /// (unfinished multipart uploads, temporaries), however recent: for rerunning a run that was
  /// killed, when no other run writes there (see ObjectStore::abort_stale_uploads).
  bool abort_stale = false;
  /// Objects uploaded at the same time (TRAW), at least 1.
  std::size_t max_uploads = 8;
  /// How each object is uploaded. The defaults keep one buffer being filled and one part in
  /// flight per object: with max_uploads objects open (or, for safetensors, one per rank of every
  /// size) the writers hold at most that many × (single_put_limit or part_size) + part_size.
  WriteOptions write{.single_put_limit = std::size_t{8} << 20,
                     .part_size = std::size_t{8} << 20,
                     .max_parts_in_flight = 1};
  /// How the source is read. Its memory_limit bounds the run's buffers, whatever the model's
  /// size: the writers open at once take theirs first (see `write`; a local destination's writers
  /// only a 1 MiB buffer each, they write through), the source tensors held get the rest. Its
  /// rank and tensor_parallel_size are not used.
  StreamerOptions stream{};
  /// Called on the run's thread after every change of the counters, and once a second while a
  /// request waits for its server (see PartitionProgress::waiting_for); must not block.
  std::function<void(const PartitionProgress&)> on_progress{};
};

/// What partition_checkpoint() wrote.
struct PartitionReport {
  std::size_t tensors = 0;               ///< Source tensors.
  std::uint64_t source_bytes = 0;        ///< Their bytes, each read once.
  std::size_t objects = 0;               ///< Weight objects written.
  std::uint64_t bytes_written = 0;       ///< Their bytes, headers included.
  std::vector<std::string> artifacts;    ///< Other files copied (config.json, ...), relative.
  std::uint64_t artifact_bytes = 0;      ///< Their bytes.
  std::size_t stale_uploads_removed = 0; ///< With `abort_stale`: what killed writers had left.
  HeadConfig heads;                      ///< The head layout the rules used.
};

/// Writes the checkpoint at `source` (any URL or path a stream accepts: a file, an index, a
/// prefix) cut for every size of `options.tensor_parallel_sizes` under the prefix `destination`
/// (a local directory or any URL whose store can write, e.g. `s3://bucket/raw/llama/`):
///
///     destination/config.json, tokenizer files, ... (the source prefix's other files)
///     destination/TP{n}/shard{r}/<tensor name>.bin   (PartitionFormat::traw)
///     destination/TP{n}/shard{r}/model.safetensors   (PartitionFormat::safetensors)
///
/// Each rank's tensor is cut by partition_tensor() with the head layout of the source's
/// config.json. Every source tensor is read once and written to every size and rank from that
/// one read; memory stays within the stream's memory_limit, the writers' buffers included (see
/// PartitionOptions::stream). Each object becomes visible only once complete (ObjectWriter); on
/// failure the objects already committed stay and none is partial.
///
/// Checked before anything is read or written, each an InvalidArgument naming the tensor or
/// the destination: bad options (among them a memory limit the writers' buffers fill); a
/// config.json without the head layout; a tensor the rules cannot
/// split for a size (heads or rows that do not divide); a tensor the rules do not know that has
/// two or more dimensions (it cannot be placed); for TRAW, a tensor TRAW cannot hold (no
/// dimensions, a zero dimension) or a name that is not a plain object name; a destination whose
/// store cannot write; a destination that holds objects, unless `overwrite`. A destination that
/// cannot be reached fails its listing, before any upload, with the store's StorageError. Errors
/// of the source are a stream's.
///
/// Runs on the awaiting coroutine's executor, which must be single-threaded or a strand.
TENSORSTREAM_API
boost::asio::awaitable<PartitionReport> partition_checkpoint(std::string source,
                                                             std::string destination,
                                                             PartitionOptions options = {});

/// Like partition_checkpoint(), blocking the calling thread, which runs the uploads.
TENSORSTREAM_API
PartitionReport partition_checkpoint_blocking(std::string source, std::string destination,
                                              PartitionOptions options = {});

/// The key of rank `rank`'s part of `tensor_name` for size `tp_size` below `prefix` (ending in
/// '/'): `prefix + "TP{tp_size}/shard{rank}/" + tensor_name + ".bin"`.
TENSORSTREAM_API
std::string traw_partition_key(const std::string& prefix, int tp_size, int rank,
                               const std::string& tensor_name);

}  // namespace tensorstream
