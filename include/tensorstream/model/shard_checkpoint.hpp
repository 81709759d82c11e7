#pragma once
/// @file
/// Writing a checkpoint's tensor-parallel rank files: what `tensorstream shard` does.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/model/head_config.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// Options of shard_checkpoint().
struct ShardOptions {
  /// Ranks to write files for.
  int tensor_parallel_size = 1;
  /// Replaces `num_key_value_heads` of the source's config.json.
  std::optional<std::int64_t> num_key_value_heads{};
  /// Most tensor bytes in one part file. Parts are split between tensors; a tensor larger than
  /// this has a part of its own.
  std::uint64_t max_part_size = 5ull << 30;
  /// How the source is read. Its rank and tensor_parallel_size are not used: the source is one
  /// unpartitioned checkpoint.
  StreamerOptions stream{};
};

/// What shard_checkpoint() wrote.
struct ShardReport {
  std::vector<std::filesystem::path> files;  ///< Every file, rank by rank, part by part.
  std::size_t tensors = 0;                   ///< Tensors of the source.
  std::uint64_t source_bytes = 0;            ///< Their bytes.
  std::uint64_t bytes = 0;                   ///< Bytes of the files written, headers included.
  HeadConfig heads;                          ///< The head layout the rules used.
};

/// The name of part `part` of rank `rank`: `model-rank-{rank}-part-{part}.safetensors`, the
/// files a stream with tensor_parallel_size > 1 reads.
std::string rank_file_name(int rank, int part);

/// Splits the checkpoint at `source` (any URL or path a stream accepts; a prefix's files are
/// merged as a stream merges them) into the rank files of `options.tensor_parallel_size` ranks in
/// the local directory `destination` (created if missing), following partition_tensor()'s rules
/// with the head layout of the source's `config.json` (next to the file, or under the prefix).
///
/// Every rank's files hold the same tensors under the same names, in the source's order, with
/// the rank's shape and bytes. The source is read once, one tensor after another, so memory stays
/// within the stream's memory_limit plus a 16 MiB buffer. Files are written as `.partial` and
/// renamed into place once every tensor is in; rank files already in `destination` that this run
/// does not write are removed then, so the directory holds one consistent set. Nothing else is
/// copied.
///
/// Throws InvalidArgument for bad options, a config.json without the head layout, or a tensor
/// the rules cannot split (before any file is written); what a stream throws for the source;
/// StorageError naming the file that could not be written.
ShardReport shard_checkpoint(const std::string& source, const std::filesystem::path& destination,
                             const ShardOptions& options = {});

}  // namespace tensorstream
