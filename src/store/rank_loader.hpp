#pragma once
// Loading a store server's ranks into shared regions: each rank of a pre-partitioned checkpoint
// streamed straight into its region, or a plain checkpoint read once and cut for every rank.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "streaming/wait_watch.hpp"
#include "store/region_holders.hpp"
#include "tensorstream/store/rank_layout.hpp"
#include "tensorstream/store/shared_region.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::store::detail {

/// Where a served rank is in its life.
enum class RankState { queued, loading, ready, failed };

/// One rank a store server serves, as loading fills it in.
struct ServedRank {
  int rank = 0;
  RankState state = RankState::queued;
  /// Set once the rank's tensors are known (loading, ready).
  std::optional<RankLayout> layout;
  /// Shared with the stream that fills it (StreamerOptions::placement), which may still be
  /// writing when a failed load drops it here.
  std::shared_ptr<SharedRegion> weights;
  std::optional<SharedRegion> kv_cache;
  /// The attach reply's JSON, once ready.
  std::string manifest_json;
  /// Weight bytes the rank holds, and how many of them have landed.
  std::uint64_t bytes = 0;
  std::uint64_t bytes_loaded = 0;
  std::chrono::steady_clock::time_point started;
  std::chrono::steady_clock::time_point finished;
  /// Why the rank failed.
  std::exception_ptr error;
  /// Attach replies handed out, and attach requests waiting for the rank to be ready.
  std::size_t attaches = 0;
  std::size_t waiting = 0;
  /// The processes the replies went to; shared with the server's record of the generation once
  /// a reload replaces it, while they still hold it.
  std::shared_ptr<RegionHolders> holders;
};

/// What load_ranks() needs besides the source.
struct LoadOptions {
  int tensor_parallel_size = 1;
  bool fuse = true;
  KvCacheOptions kv_cache;
  /// Which of the server's loads this is (Manifest::generation).
  std::uint64_t generation = 1;
  /// How the source is read; tensor_parallel_size, rank and placement are the loader's.
  StreamerOptions stream;
  /// Where given, watches the loader's store and streams while they are in use, for reports of
  /// what their requests wait for.
  tensorstream::detail::WaitWatch* waits = nullptr;
};

/// Called on the loading coroutine's executor each time a rank changes state or more of its
/// bytes land.
using RankChanged = std::function<void(ServedRank&)>;

/// Loads every rank of `ranks` (queued, distinct, within the tensor-parallel size) from `source`.
///
/// A source holding TRAW partitions (`TP{n}/shard{r}/`) or rank files
/// (`model-rank-{r}-part-*.safetensors`) is streamed rank by rank, each tensor read straight to
/// its place in the rank's weights region (fused parts included). Any other checkpoint is
/// streamed once, whole, within the stream's memory limit, and every tensor is cut into each
/// rank's region with the partition rules of `tensorstream shard` (at TP 1 too, which pads the
/// vocabulary as vLLM does); its config.json must give the head layout. A rank's weights are sealed read-only when all of
/// them have landed; it is then ready.
///
/// On failure every rank not yet ready is marked failed with the error, which is rethrown.
/// Cancellation (of the awaiting coroutine) fails them the same way.
boost::asio::awaitable<void> load_ranks(std::string source, LoadOptions options,
                                        std::vector<ServedRank>& ranks, RankChanged changed);

}  // namespace tensorstream::store::detail
