#pragma once
/// @file
/// Writing a checkpoint's tensor-parallel rank files: what `tensorstream shard` does.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/model/head_config.hpp"
#include "tensorstream/storage/object_writer.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// How far shard_checkpoint() is.
struct ShardProgress {
  std::uint64_t bytes_written = 0;  ///< Source tensor bytes handed to every rank's file.
  std::uint64_t bytes = 0;          ///< Source tensor bytes in all.
  std::size_t tensors_written = 0;  ///< Source tensors handed to every rank's file.
  std::size_t tensors = 0;          ///< Source tensors in all.
  /// Of the requests of the stream and the destination waiting for their server, the one that
  /// has waited longest, as PartitionProgress::waiting_for; empty and 0 while none waits.
  std::string waiting_for{};
  double waiting_seconds = 0;
};

/// Options of shard_checkpoint().
struct ShardOptions {
  /// Ranks to write files for.
  int tensor_parallel_size = 1;
  /// Replaces `num_key_value_heads` of the source's config.json.
  std::optional<std::int64_t> num_key_value_heads{};
  /// Most tensor bytes in one part file. Parts are split between tensors; a tensor larger than
  /// this has a part of its own.
  std::uint64_t max_part_size = 5ull << 30;
  /// How the source is read, and `store` also how the destination is opened. Its rank and
  /// tensor_parallel_size are not used (the source is one unpartitioned checkpoint), nor its
  /// read_order: the source is always read in ReadOrder::file_order.
  StreamerOptions stream{};
  /// How each rank file is uploaded (s3://). Every part file stays open until the last tensor is
  /// in, so each may hold up to max(single_put_limit, part_size) + part_size ×
  /// max_parts_in_flight bytes; one part in flight keeps that at 16 MiB with the other defaults.
  WriteOptions write{.max_parts_in_flight = 1};
  /// Write into a destination that already holds rank files (`model-rank-*.safetensors`),
  /// replacing them. Without it such a destination is an error, raised before anything is read:
  /// a second run into the same place is more often a mistyped path than a wish to replace.
  bool overwrite = false;
  /// Called on the calling thread after the first look at the source, after every tensor
  /// written, and once a second while a request waits for its server (see
  /// ShardProgress::waiting_for). Must not throw.
  std::function<void(const ShardProgress&)> on_progress{};
};

/// What shard_checkpoint() wrote.
struct ShardReport {
  /// Every file, rank by rank, part by part: its path for a local destination, else its URL.
  std::vector<std::string> files;
  std::size_t tensors = 0;         ///< Tensors of the source.
  std::uint64_t source_bytes = 0;  ///< Their bytes.
  std::uint64_t bytes = 0;         ///< Bytes of the files written, headers included.
  HeadConfig heads;                ///< The head layout the rules used.
};

/// The name of part `part` of rank `rank`: `model-rank-{rank}-part-{part}.safetensors`, the
/// files a stream with tensor_parallel_size > 1 reads.
std::string rank_file_name(int rank, int part);

/// Splits the checkpoint at `source` (any URL or path a stream accepts; a prefix's files are
/// merged as a stream merges them) into the rank files of `options.tensor_parallel_size` ranks
/// under `destination`, following partition_tensor()'s rules with the head layout of the source's
/// `config.json` (next to the file, or under the prefix). `destination` is a local directory
/// (created if missing) or the URL of a directory or prefix of any store that can write (file://,
/// s3://, ...).
///
/// Every rank's files hold the same tensors under the same names, in the source's order, with
/// the rank's shape and bytes. The source is read once, in file order (ReadOrder::file_order), and
/// every part file is written front to back through its store's ObjectWriter: tensors that
/// complete before their predecessors wait in the stream's memory. Memory therefore stays within
/// the stream's memory_limit, a 16 MiB buffer, and what the writers of a bucket buffer (see
/// ShardOptions::write; nothing for files). No file is visible before every tensor is in: then
/// all are committed; a failure aborts them all, leaving what was there before.
///
/// A destination that holds rank files is refused (InvalidArgument, before anything is read)
/// unless `options.overwrite`. With it, rank files already in a local `destination` that this
/// run does not write are removed before the commit, so the directory holds one consistent set. Stores cannot delete objects, so a
/// bucket prefix holding such a rank file (of an earlier run with more ranks or parts) is refused
/// with InvalidArgument before any tensor is read. Nothing else is copied.
///
/// Throws InvalidArgument for bad options, a destination whose store cannot write (before
/// anything is read), a config.json without the head layout, or a tensor the rules cannot split
/// (before any file is written); what a stream throws for the source; StorageError naming the
/// file that could not be written.
ShardReport shard_checkpoint(const std::string& source, const std::string& destination,
                             const ShardOptions& options = {});

}  // namespace tensorstream
