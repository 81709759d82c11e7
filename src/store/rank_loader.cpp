#include "store/rank_loader.hpp"

#include <simdjson.h>

#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <cstring>
#include <map>
#include <list>
#include <span>
#include <stop_token>

#include "model/read_head_config.hpp"
#include "streaming/discovery.hpp"
#include "streaming/partition_layout.hpp"
#include "tensorstream/async/library_thread.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/head_config.hpp"
#include "tensorstream/model/partition_rules.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::store::detail {
namespace {

namespace asio = boost::asio;
using tensorstream::detail::SourceFile;

constexpr std::string_view rank_file_prefix = "model-rank-";

std::string file_name(const std::string& key) { return key.substr(key.rfind('/') + 1); }

// Whether `url` holds a checkpoint already cut by rank: TRAW partitions or a shard's TRAW
// objects, or the rank files of `tensorstream shard`. Only a listing can tell.
asio::awaitable<bool> holds_partitions(ObjectStore& store, const Url& url) {
  if (!url.is_prefix() || !store.can_list()) co_return false;
  auto layout = tensorstream::detail::classify_listing(
      co_await store.list(url.path, ListDepth::recursive), url.path);
  co_return !layout.partitions.empty() ||
      (!layout.traw_objects.empty() && layout.safetensors.empty()) ||
      std::any_of(layout.safetensors.begin(), layout.safetensors.end(), [](const auto& object) {
        return file_name(object.key).starts_with(rank_file_prefix);
      });
}

// The config.json beside the checkpoint, verbatim (it goes into every manifest), or nullopt when
// there is none.
asio::awaitable<std::optional<std::string>> read_config(ObjectStore& store,
                                                        const std::string& key) {
  std::string text;
  try {
    text = co_await tensorstream::detail::read_config_text(store, key);
  } catch (const NotFoundError&) {
    co_return std::nullopt;
  }
  simdjson::dom::parser parser;
  simdjson::dom::object object;
  if (parser.parse(simdjson::padded_string(text)).get(object)) {
    throw FormatError(store.url(key) + ": not a JSON object");
  }
  co_return text;
}

std::vector<TensorSpec> specs_of(const std::vector<SourceFile>& files) {
  std::vector<TensorSpec> specs;
  for (const auto& file : files) {
    for (const auto& tensor : file.header.tensors) {
      specs.push_back({tensor.name, tensor.dtype, tensor.shape});
    }
  }
  return specs;
}

// Plans the rank's regions and creates them (zero-filled), ready for its bytes to land.
void prepare(ServedRank& rank, std::span<const TensorSpec> rank_tensors,
             const std::string& config_json, const std::string& model, const LoadOptions& options) {
  RankLayout layout = plan_rank_layout(rank_tensors, config_json, rank.rank,
                                       options.tensor_parallel_size, options.fuse,
                                       options.kv_cache);
  layout.manifest.model = model;
  layout.manifest.generation = options.generation;
  // The generation in the name tells a reloaded rank's memory from its predecessor's in
  // /proc/PID/maps.
  const std::string name = "tensorstream-rank" + std::to_string(rank.rank) +
                           (options.generation == 1 ? "" : "-g" + std::to_string(options.generation));
  rank.weights = std::make_shared<SharedRegion>(name + "-weights",
                                                layout.manifest.regions.at(0).bytes);
  if (layout.manifest.regions.size() > 1) {
    rank.kv_cache.emplace(name + "-kv-cache", layout.manifest.regions.at(1).bytes);
    // Workers write the cache, but none may resize or seal it under the others.
    rank.kv_cache->seal_size();
  }
  rank.bytes = 0;
  for (const auto& placement : layout.placements) rank.bytes += placement.bytes;
  rank.layout = std::move(layout);
}

// Allocates a region's pages on a thread of its own while the stream fills it: as bytes land in
// pages already there, the stream's threads do not fault them in one at a time, which is what
// costs the most where memory is first written (SharedRegion::populate()). Stopped before the
// region is sealed or dropped, on the server's io thread: by then the stream has written every
// page it will, and the thread ends within one populate_step.
class Prefault {
 public:
  explicit Prefault(SharedRegion& region)
      : thread_("ts-populate", [&region, stop = stop_.get_token()] { region.populate(stop); }) {}
  ~Prefault() { stop(); }
  Prefault(const Prefault&) = delete;
  Prefault& operator=(const Prefault&) = delete;

  void stop() {
    stop_.request_stop();
    thread_.join();
  }

 private:
  std::stop_source stop_;
  async::LibraryThread thread_;
};

void start(ServedRank& rank, const RankChanged& changed) {
  rank.state = RankState::loading;
  rank.started = std::chrono::steady_clock::now();
  changed(rank);
}

void finish(ServedRank& rank, std::size_t landed, const Url& url, const RankChanged& changed) {
  // Stopped meanwhile: the rank stays failed, as its waiters were told.
  if (rank.state == RankState::failed) std::rethrow_exception(rank.error);
  if (landed != rank.layout->placements.size()) {
    throw StateError(url.str() + ": the stream ended after " + std::to_string(landed) +
                     " of rank " + std::to_string(rank.rank) + "'s " +
                     std::to_string(rank.layout->placements.size()) + " tensors");
  }
  rank.weights->seal_read_only();
  rank.manifest_json = to_json(rank.layout->manifest);
  rank.finished = std::chrono::steady_clock::now();
  rank.state = RankState::ready;
  changed(rank);
}

// The stored tensor's place in the rank's weights region, checked against what the stream
// yields: the source may have changed since its headers were read.
const Placement& placement_of(const ServedRank& rank, const TensorInfo& tensor,
                              const std::string& object) {
  const Placement* placement = rank.layout->find(tensor.name);
  if (placement == nullptr || placement->bytes != tensor.byte_size()) {
    throw StateError(object + ": tensor \"" + tensor.name +
                     "\" is not the one its header described when loading began");
  }
  return *placement;
}

// Each rank's own tensors, read straight into its region.
asio::awaitable<void> load_partitioned(const std::string& source, const Url& url,
                                       ObjectStore& store, const std::string& config_json,
                                       const LoadOptions& options, std::vector<ServedRank>& ranks,
                                       const RankChanged& changed) {
  for (auto& rank : ranks) {
    StreamerOptions stream = options.stream;
    stream.tensor_parallel_size = options.tensor_parallel_size;
    stream.rank = rank.rank;
    const auto files = co_await tensorstream::detail::discover(store, url, stream);
    prepare(rank, specs_of(files), config_json, url.str(), options);
    Prefault prefault(*rank.weights);
    start(rank, changed);

    std::byte* const base = rank.weights->writable().data();
    stream.placement = [&rank, base](const TensorInfo& tensor,
                                     const std::string&) -> std::shared_ptr<std::byte> {
      const Placement* placement = rank.layout->find(tensor.name);
      if (!placement || placement->bytes != tensor.byte_size()) return nullptr;
      return {rank.weights, base + placement->offset};
    };
    RawStreamer streamer(source, stream);
    const auto watching = tensorstream::detail::watch_if(options.waits, streamer);
    std::size_t landed = 0;
    while (auto tensor = co_await streamer.next()) {
      const Placement& placement = placement_of(rank, tensor->info, tensor->object);
      std::byte* const destination = base + placement.offset;
      if (tensor->data.get() != destination && placement.bytes != 0) {
        std::memcpy(destination, tensor->data.get(), placement.bytes);
      }
      rank.bytes_loaded += placement.bytes;
      ++landed;
      changed(rank);
    }
    prefault.stop();
    finish(rank, landed, url, changed);
  }
}

// Every tensor read once, whole, and cut into each rank's region.
asio::awaitable<void> load_cut(const std::string& source, const Url& url, ObjectStore& store,
                               const std::string& config_key, const LoadOptions& options,
                               std::vector<ServedRank>& ranks, const RankChanged& changed) {
  StreamerOptions stream = options.stream;
  stream.tensor_parallel_size.reset();
  stream.rank = 0;
  // The checkpoint first, so that a wrong source is named as such rather than by its config.
  const auto files = co_await tensorstream::detail::discover(store, url, stream);
  const auto config_json = co_await read_config(store, config_key);
  if (!config_json) {
    throw NotFoundError(store.url(config_key),
                        "not found; partitioning a checkpoint for tensor parallelism needs its "
                        "head layout from config.json");
  }
  const HeadConfig heads = parse_head_config(*config_json, store.url(config_key));

  struct Cut {
    TensorSpec tensor;
    std::vector<TensorPartition> parts;  // One per served rank, in the order of `ranks`.
  };
  std::map<std::string, Cut, std::less<>> cuts;
  std::vector<std::vector<TensorSpec>> rank_tensors(ranks.size());
  for (auto& tensor : specs_of(files)) {
    Cut cut{tensor, {}};
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      cut.parts.push_back(
          partition_tensor(tensor, heads, options.tensor_parallel_size, ranks[i].rank));
      rank_tensors[i].push_back({tensor.name, tensor.dtype, cut.parts.back().shape});
    }
    cuts.emplace(tensor.name, std::move(cut));
  }
  std::list<Prefault> prefaults;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    prepare(ranks[i], rank_tensors[i], *config_json, url.str(), options);
    prefaults.emplace_back(*ranks[i].weights);
  }
  for (auto& rank : ranks) start(rank, changed);

  RawStreamer streamer(source, stream);
  const auto watching = tensorstream::detail::watch_if(options.waits, streamer);
  std::size_t landed = 0;
  while (auto tensor = co_await streamer.next()) {
    const auto cut = cuts.find(tensor->info.name);
    if (cut == cuts.end() || tensor->info.shape != cut->second.tensor.shape ||
        tensor->info.dtype != cut->second.tensor.dtype) {
      throw StateError(tensor->object + ": tensor \"" + tensor->info.name +
                       "\" is not the one its header described when loading began");
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      ServedRank& rank = ranks[i];
      const Placement* placement = rank.layout->find(tensor->info.name);
      std::byte* const destination = rank.weights->writable().data() + placement->offset;
      fill_partition_bytes(cut->second.tensor, cut->second.parts[i], tensor->bytes(), 0,
                           {destination, placement->bytes});
      rank.bytes_loaded += placement->bytes;
      changed(rank);
    }
    ++landed;
  }
  for (auto& prefault : prefaults) prefault.stop();
  for (auto& rank : ranks) finish(rank, landed, url, changed);
}

asio::awaitable<void> load(const std::string& source, const LoadOptions& options,
                           std::vector<ServedRank>& ranks, const RankChanged& changed) {
  const auto executor = co_await asio::this_coro::executor;
  const Url url = tensorstream::resolve_url(source);
  const auto store = open_store(url, executor, options.stream.store);
  const auto watching = tensorstream::detail::watch_if(options.waits, *store);
  const std::string prefix =
      url.is_prefix() ? url.path : url.path.substr(0, url.path.rfind('/') + 1);
  const std::string config_key = prefix + "config.json";
  if (!co_await holds_partitions(*store, url)) {
    co_await load_cut(source, url, *store, config_key, options, ranks, changed);
    co_return;
  }
  auto config = co_await read_config(*store, config_key);
  if (!config) {
    if (options.kv_cache.num_blocks || options.kv_cache.memory) {
      throw NotFoundError(store->url(config_key),
                          "not found; the KV cache is sized from the model's config.json");
    }
    config = "{}";
  }
  co_await load_partitioned(source, url, *store, *config, options, ranks, changed);
}

}  // namespace

asio::awaitable<void> load_ranks(std::string source, LoadOptions options,
                                 std::vector<ServedRank>& ranks, RankChanged changed) {
  try {
    co_await load(source, options, ranks, changed);
  } catch (...) {
    const auto error = std::current_exception();
    for (auto& rank : ranks) {
      if (rank.state == RankState::ready) continue;
      // A stopped server failed its ranks already, with the reason their waiters were told.
      if (rank.state != RankState::failed) rank.error = error;
      rank.state = RankState::failed;
      rank.weights.reset();
      rank.kv_cache.reset();
      rank.finished = std::chrono::steady_clock::now();
      changed(rank);
    }
    throw;
  }
}

}  // namespace tensorstream::store::detail
