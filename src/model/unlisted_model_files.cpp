#include "model/unlisted_model_files.hpp"

#include <algorithm>
#include <optional>

#include "streaming/discovery.hpp"
#include "streaming/run_concurrently.hpp"
#include "streaming/weight_index.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/model/model_files.hpp"

namespace tensorstream::detail {
namespace {

namespace asio = boost::asio;

// The sizes of `keys`, at most `max_concurrency` requests at a time; nullopt for a missing one
// where `optional`, else its NotFoundError propagates.
asio::awaitable<std::vector<std::optional<std::uint64_t>>> sizes_of(
    ObjectStore& store, const std::vector<std::string>& keys, std::size_t max_concurrency,
    bool optional) {
  std::vector<std::optional<std::uint64_t>> sizes(keys.size());
  std::size_t next = 0;
  co_await run_concurrently(
      std::min(std::max<std::size_t>(max_concurrency, 1), keys.size()),
      [&](std::size_t) -> asio::awaitable<void> {
        while (next < keys.size()) {
          const std::size_t index = next++;
          try {
            sizes[index] = co_await store.size(keys[index]);
          } catch (const NotFoundError&) {
            if (!optional) throw;
          }
        }
      });
  co_return sizes;
}

// The files the index at `index_key` (of `index_size` bytes) names; nullopt where it is not
// usable, which a stream warns of and passes by.
asio::awaitable<std::optional<std::vector<std::string>>> indexed_keys(ObjectStore& store,
                                                                      const std::string& index_key,
                                                                      std::uint64_t index_size) {
  const std::string text = co_await read_index(store, index_key, index_size);
  const std::string directory = index_key.substr(0, index_key.rfind('/') + 1);
  try {
    std::vector<std::string> keys;
    for (const auto& [file, tensors] : parse_weight_index(text, store.url(index_key))) {
      keys.push_back(directory + file);
    }
    co_return keys;
  } catch (const UnusableIndex& error) {
    log(LogLevel::warning, std::string(error.what()) + "; copying model.safetensors instead");
  }
  co_return std::nullopt;
}

}  // namespace

asio::awaitable<std::vector<ObjectInfo>> unlisted_model_files(ObjectStore& store,
                                                              std::string prefix,
                                                              std::size_t max_concurrency,
                                                              bool weights) {
  std::vector<std::string> keys;
  for (const auto name : known_artifact_names) keys.push_back(prefix + std::string(name));
  const auto sizes = co_await sizes_of(store, keys, max_concurrency, true);
  std::vector<ObjectInfo> objects;
  std::optional<std::uint64_t> index_size;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (!sizes[i]) continue;
    objects.push_back({keys[i], *sizes[i]});
    if (known_artifact_names[i] == weight_index_name) index_size = sizes[i];
  }
  if (weights) {
    std::optional<std::vector<std::string>> indexed;
    if (index_size) {
      indexed = co_await indexed_keys(store, prefix + std::string(weight_index_name), *index_size);
    }
    // The shards an index names must be there; a lone model.safetensors may not be.
    std::vector<std::string> weight_files{prefix + "model.safetensors"};
    if (indexed) weight_files = std::move(*indexed);
    const auto weight_sizes = co_await sizes_of(store, weight_files, max_concurrency, !indexed);
    for (std::size_t i = 0; i < weight_files.size(); ++i) {
      if (weight_sizes[i]) objects.push_back({weight_files[i], *weight_sizes[i]});
    }
  }
  std::sort(objects.begin(), objects.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.key < b.key; });
  co_return objects;
}

}  // namespace tensorstream::detail
