#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/storage/object_store.hpp"

namespace tensorstream::detail {

/// What a recursive listing of a prefix holds, by layout.
struct PrefixLayout {
  /// The `*.safetensors` files and the index directly under the prefix, sorted by key.
  std::vector<ObjectInfo> safetensors;
  /// The TRAW objects (`*.bin`) directly under the prefix, sorted by key: a shard's prefix.
  std::vector<ObjectInfo> traw_objects;
  /// The TRAW objects of `TP{size}/shard{rank}/*.bin` under the prefix, by size, then rank, each
  /// list sorted by key: a model's prefix.
  std::map<int, std::map<int, std::vector<ObjectInfo>>> partitions;
};

/// Sorts the `listing` of `prefix` (recursive, keys starting with `prefix`, sorted) into layouts.
/// Other objects, deeper ones and directory placeholders are left out.
PrefixLayout classify_listing(std::vector<ObjectInfo> listing, std::string_view prefix);

/// The objects of the partition that `tensor_parallel_size` and `rank` select in `layout`, which
/// has partitions. Throws, naming `prefix_url` and listing what exists, InvalidArgument when no
/// size is given and NotFoundError for a size or rank that was not written, e.g.
/// `s3://b/raw/m/: no TP8 partition; TP sizes present: 1, 2, 4`.
std::vector<ObjectInfo> select_partition(const PrefixLayout& layout, const std::string& prefix_url,
                                         std::optional<int> tensor_parallel_size, int rank);

/// "1, 2, 4": the partition sizes of `layout`, for messages.
std::string partition_sizes(const PrefixLayout& layout);

/// Whether `prefix` (ending in '/') ends in `TP{tensor_parallel_size}/shard{rank}/`.
bool names_partition(std::string_view prefix, int tensor_parallel_size, int rank);

}  // namespace tensorstream::detail
