#include "streaming/discovery.hpp"

#include <algorithm>
#include <charconv>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <exception>
#include <filesystem>
#include <optional>
#include <span>
#include <unordered_set>

#include "base/byte_size.hpp"
#include "streaming/partition_layout.hpp"
#include "streaming/run_concurrently.hpp"
#include "streaming/traw_source.hpp"
#include "streaming/weight_index.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/storage/scheme.hpp"
#include "tensorstream/traw/format.hpp"

namespace tensorstream::detail {
namespace {

namespace asio = boost::asio;

// Most headers fit in the first read, which saves a round trip per file.
constexpr std::uint64_t first_read_size = 64 * 1024;

// An index holds names only: a few MB for the largest models. A bigger object is not an index,
// and reading it whole would take memory no budget accounts for.
constexpr std::uint64_t max_index_size = 64ull << 20;

// Naming every tensor of a wrong file would fill pages; the first few identify the problem.
constexpr std::size_t missing_names_shown = 10;

// Files named in a message about a prefix's layouts.
constexpr std::size_t listed_names_shown = 3;

constexpr std::string_view safetensors_suffix = ".safetensors";
constexpr std::string_view index_suffix = ".safetensors.index.json";

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string_view file_name(std::string_view key) {
  const auto slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

std::string directory_of(const std::string& key) { return key.substr(0, key.rfind('/') + 1); }

// Header reads share the stream's bound on requests in flight.
std::size_t header_concurrency(const StreamerOptions& options) {
  return options.max_concurrency.value_or(default_max_concurrency);
}

asio::awaitable<SourceFile> read_safetensors_header(ObjectStore& store, std::string key,
                                                    std::uint64_t size) {
  SourceFile file;
  file.url = store.url(key);
  file.size = size;
  if (file.size < 8) {
    throw FormatError(file.url + ": " + std::to_string(file.size) +
                      " bytes is too small for a safetensors file (the header length alone is 8)");
  }
  std::vector<std::byte> bytes(std::min(file.size, first_read_size));
  co_await store.read_range(key, 0, bytes);
  const std::uint64_t length =
      parse_header_length(std::span<const std::byte, 8>(bytes.data(), 8), file.size, file.url);
  const std::uint64_t have = bytes.size();
  if (8 + length > have) {
    bytes.resize(8 + length);
    co_await store.read_range(key, have, std::span(bytes).subspan(have));
  }
  file.header = parse_header(
      std::string_view(reinterpret_cast<const char*>(bytes.data()) + 8, length), file.size,
      file.url);
  file.key = std::move(key);
  co_return file;
}

// A TRAW header is at most traw::max_header_size bytes: one read always holds it.
asio::awaitable<SourceFile> read_traw_header(ObjectStore& store, std::string key,
                                             std::uint64_t size) {
  std::vector<std::byte> prefix(std::min<std::uint64_t>(size, traw::max_header_size));
  co_await store.read_range(key, 0, prefix);
  std::string url = store.url(key);
  co_return traw_source_file(std::move(key), std::move(url), size, prefix);
}

// The object's format follows from its name, as it does when a listing is searched.
asio::awaitable<SourceFile> read_header(ObjectStore& store, HeaderSource source) {
  std::uint64_t size = 0;
  if (source.size) {
    size = *source.size;
  } else {
    size = co_await store.size(source.key);
  }
  if (ends_with(source.key, traw_suffix)) {
    co_return co_await read_traw_header(store, std::move(source.key), size);
  }
  co_return co_await read_safetensors_header(store, std::move(source.key), size);
}

// The index at `key`, or nullopt when there is none; other failures propagate.
asio::awaitable<std::optional<std::string>> read_index_if_present(ObjectStore& store,
                                                                  const std::string& key) {
  try {
    co_return co_await read_index(store, key);
  } catch (const NotFoundError&) {
    co_return std::nullopt;
  }
}

// Keeps in `file` only the tensors `listed` (sorted) names, every one of which it must hold.
void keep_listed(SourceFile& file, const std::vector<std::string>& listed,
                 const std::string& index_url) {
  std::unordered_set<std::string_view> present;
  for (const auto& info : file.header.tensors) present.insert(info.name);
  std::vector<std::string_view> missing;
  for (const auto& name : listed) {
    if (!present.contains(name)) missing.push_back(name);
  }
  if (!missing.empty()) {
    std::string message = "Missing " + std::to_string(missing.size()) + " tensor" +
                          (missing.size() == 1 ? "" : "s") + " at " + file.url + ": ";
    for (std::size_t i = 0; i < std::min(missing.size(), missing_names_shown); ++i) {
      if (i != 0) message += ", ";
      message += missing[i];
    }
    if (missing.size() > missing_names_shown) {
      message += " and " + std::to_string(missing.size() - missing_names_shown) + " more";
    }
    throw FormatError(message + " (listed in " + index_url + ")");
  }
  std::erase_if(file.header.tensors, [&](const TensorInfo& info) {
    return !std::binary_search(listed.begin(), listed.end(), info.name);
  });
}

asio::awaitable<std::vector<SourceFile>> indexed_files(ObjectStore& store,
                                                       const std::string& index_key,
                                                       const WeightIndex& index,
                                                       std::size_t max_concurrency) {
  const std::string directory = directory_of(index_key);
  std::vector<HeaderSource> sources;
  for (const auto& [file, tensors] : index) sources.push_back({directory + file, std::nullopt});
  auto files = co_await read_headers(store, std::move(sources), max_concurrency);
  const std::string index_url = store.url(index_key);
  auto listed = index.begin();
  for (auto& file : files) keep_listed(file, (listed++)->second, index_url);
  co_return files;
}

// Keeps each name in the first file holding it, as the Python original does.
void drop_repeated_names(std::vector<SourceFile>& files) {
  std::unordered_set<std::string> seen;
  for (auto& file : files) {
    std::erase_if(file.header.tensors, [&](const TensorInfo& info) {
      if (seen.insert(info.name).second) return false;
      log(LogLevel::warning, "tensor " + info.name + " in " + file.url +
                                 " is skipped: an earlier file already has it");
      return true;
    });
  }
}

// The files of `listed` (the objects directly under the prefix `url`, sorted) named
// `name_prefix*.safetensors`, headers read.
asio::awaitable<std::vector<SourceFile>> matching_files(ObjectStore& store, const Url& url,
                                                        const std::vector<ObjectInfo>& listed,
                                                        const std::string& name_prefix,
                                                        std::size_t max_concurrency) {
  std::vector<HeaderSource> sources;
  // The listing's sizes spare each file a size request before its header is read.
  for (const auto& object : listed) {
    const auto name = file_name(object.key);
    if (name.starts_with(name_prefix) && ends_with(name, safetensors_suffix)) {
      sources.push_back({object.key, object.size});
    }
  }
  if (sources.empty()) {
    throw NotFoundError(url.str(), "no files found matching pattern: " + name_prefix +
                                       "*.safetensors, nor TRAW objects (*.bin) or partitions "
                                       "(TP{n}/shard{r}/*.bin)");
  }
  auto files = co_await read_headers(store, std::move(sources), max_concurrency);
  drop_repeated_names(files);
  co_return files;
}

// `layout` is the prefix's, when the store can list.
asio::awaitable<std::vector<SourceFile>> rank_files(ObjectStore& store, const Url& url,
                                                    const StreamerOptions& options,
                                                    const std::optional<PrefixLayout>& layout) {
  if (!url.is_prefix()) {
    throw InvalidArgument(url.str() +
                          ": tensor_parallel_size > 1 needs a prefix holding rank files, "
                          "not a single file");
  }
  if (!layout) {
    throw InvalidArgument(url.str() + ": rank files cannot be found without listing");
  }
  const std::string name_prefix = "model-rank-" + std::to_string(options.rank) + "-part-";
  co_return co_await matching_files(store, url, layout->safetensors, name_prefix,
                                    header_concurrency(options));
}

// "a, b, c and 2 more": the names of the first few `objects`, enough to recognise a checkpoint.
std::string some_names(const std::vector<ObjectInfo>& objects) {
  std::string text;
  for (std::size_t i = 0; i < std::min(objects.size(), listed_names_shown); ++i) {
    if (i != 0) text += ", ";
    text += file_name(objects[i].key);
  }
  if (objects.size() > listed_names_shown) {
    text += " and " + std::to_string(objects.size() - listed_names_shown) + " more";
  }
  return text;
}

// The TRAW objects the `layout` of the prefix `url` selects: a shard's prefix, or a model's prefix
// with a partition chosen by the options. Nullopt for a prefix without TRAW objects, or a
// safetensors checkpoint beside some *.bin files (Hugging Face repositories keep pickles so named).
std::optional<std::vector<HeaderSource>> traw_sources(PrefixLayout& layout, const Url& url,
                                                      const StreamerOptions& options) {
  std::vector<ObjectInfo> objects;
  if (!layout.partitions.empty()) {
    if (!layout.safetensors.empty()) {
      throw InvalidArgument(url.str() + ": holds both a safetensors checkpoint (" +
                            some_names(layout.safetensors) +
                            ") and TRAW partitions (TP sizes present: " + partition_sizes(layout) +
                            "); name the file, the index or a shard's prefix TP{n}/shard{r}/");
    }
    objects = select_partition(layout, url.str(), options.tensor_parallel_size, options.rank);
  } else if (!layout.traw_objects.empty() && layout.safetensors.empty()) {
    const auto size = options.tensor_parallel_size;
    if (size && !names_partition(url.path, *size, options.rank)) {
      throw InvalidArgument(url.str() + ": holds the TRAW objects of one shard, not TP" +
                            std::to_string(*size) + "/shard" + std::to_string(options.rank) +
                            "/; leave tensor_parallel_size and rank unset, or name the model's "
                            "prefix");
    }
    objects = std::move(layout.traw_objects);
  } else {
    return std::nullopt;
  }
  std::vector<HeaderSource> sources;
  for (auto& object : objects) sources.push_back({std::move(object.key), object.size});
  return sources;
}

// A prefix without tensor parallelism: its index, else its files (`layout`, the prefix's when
// the store can list), else model.safetensors.
asio::awaitable<std::vector<SourceFile>> prefix_files(ObjectStore& store, const Url& url,
                                                      std::size_t max_concurrency,
                                                      const std::optional<PrefixLayout>& layout) {
  const std::string index_key = url.path + std::string(weight_index_name);
  std::optional<std::string> text;
  if (layout) {
    // The listing says whether there is an index, and its size: no request to find out.
    const auto listed = std::find_if(layout->safetensors.begin(), layout->safetensors.end(),
                                     [&](const ObjectInfo& info) { return info.key == index_key; });
    if (listed != layout->safetensors.end()) {
      const std::optional<std::uint64_t> size = listed->size;
      text = co_await read_index(store, index_key, size);
    }
  } else {
    text = co_await read_index_if_present(store, index_key);
  }
  std::optional<WeightIndex> index;
  if (text) {
    try {
      index = parse_weight_index(*text, store.url(index_key));
    } catch (const UnusableIndex& error) {
      log(LogLevel::warning,
          std::string(error.what()) + "; streaming " +
              (layout ? "every *.safetensors file under " + url.str() : "model.safetensors") +
              " instead");
    }
  }
  if (index) co_return co_await indexed_files(store, index_key, *index, max_concurrency);
  if (layout) {
    co_return co_await matching_files(store, url, layout->safetensors, "", max_concurrency);
  }

  // Without a listing, the one name a single-file checkpoint conventionally has is all there is.
  std::vector<HeaderSource> sources{{url.path + "model.safetensors", std::nullopt}};
  try {
    co_return co_await read_headers(store, std::move(sources), max_concurrency);
  } catch (const NotFoundError&) {
    // Reported below, together with the index that was not there either.
  }
  throw NotFoundError(url.str(),
                      std::string(text ? "found no usable " : "found neither ") +
                          std::string(weight_index_name) + (text ? " and no " : " nor ") +
                          "model.safetensors, and this store cannot list a prefix: name the "
                          "file or index to stream");
}

// `tensorstream shard`'s output streamed whole would be rank 0's slices and every other rank's
// beside them, each tensor name many times: a prefix of rank files needs a rank chosen.
void refuse_rank_files(const PrefixLayout& layout, const Url& url) {
  constexpr std::string_view marker = "model-rank-";
  int ranks = 0;
  for (const ObjectInfo& object : layout.safetensors) {
    const std::string_view name = std::string_view(object.key).substr(object.key.rfind('/') + 1);
    if (!name.starts_with(marker)) continue;
    int rank = 0;
    const char* digits = name.data() + marker.size();
    const auto [end, ec] = std::from_chars(digits, name.data() + name.size(), rank);
    if (ec != std::errc{} || !std::string_view(end, name.data() + name.size()).starts_with("-part-")) {
      continue;
    }
    ranks = std::max(ranks, rank + 1);
  }
  if (ranks == 0) return;
  throw InvalidArgument(url.str() + ": holds the rank files of TP " + std::to_string(ranks) +
                        " (model-rank-{r}-part-*.safetensors); choose one with --tp " +
                        std::to_string(ranks) +
                        " --rank R (StreamerOptions tensor_parallel_size and rank)");
}

// Every file and tensor the URL names, before the caller's selection.
asio::awaitable<std::vector<SourceFile>> discover_all(ObjectStore& store, const Url& url,
                                                      const StreamerOptions& options) {
  const std::size_t max_concurrency = header_concurrency(options);
  std::optional<PrefixLayout> layout;
  if (url.is_prefix() && store.can_list()) {
    // Recursive: partitions are directories, which a one-level listing does not show.
    std::vector<ObjectInfo> listing = co_await store.list(url.path, ListDepth::recursive);
    layout = classify_listing(std::move(listing), url.path);
    auto traw = traw_sources(*layout, url, options);
    if (traw) co_return co_await read_headers(store, std::move(*traw), max_concurrency);
  }
  if (layout && !options.tensor_parallel_size) refuse_rank_files(*layout, url);
  if (options.tensor_parallel_size.value_or(1) > 1) {
    co_return co_await rank_files(store, url, options, layout);
  }
  if (url.is_prefix()) co_return co_await prefix_files(store, url, max_concurrency, layout);
  if (ends_with(url.path, index_suffix)) {
    const std::string text = co_await read_index(store, url.path);
    const WeightIndex index = parse_weight_index(text, url.str());
    co_return co_await indexed_files(store, url.path, index, max_concurrency);
  }
  std::vector<HeaderSource> sources{{url.path, std::nullopt}};
  co_return co_await read_headers(store, std::move(sources), max_concurrency);
}

}  // namespace

asio::awaitable<std::string> read_index(ObjectStore& store, const std::string& key,
                                        std::optional<std::uint64_t> listed_size) {
  const std::uint64_t size = listed_size ? *listed_size : co_await store.size(key);
  if (size > max_index_size) {
    throw FormatError(store.url(key) + ": " + format_byte_size(size) +
                      " is too large for a safetensors index (at most " +
                      format_byte_size(max_index_size) + ")");
  }
  std::string text(size, '\0');
  co_await store.read_range(key, 0, std::as_writable_bytes(std::span(text)));
  co_return text;
}

asio::awaitable<std::vector<SourceFile>> discover(ObjectStore& store, const Url& url,
                                                  const StreamerOptions& options) {
  std::vector<SourceFile> files = co_await discover_all(store, url, options);
  if (options.select) {
    for (auto& file : files) {
      std::erase_if(file.header.tensors,
                    [&](const TensorInfo& info) { return !options.select(info, file.url); });
    }
    std::erase_if(files, [](const SourceFile& file) { return file.header.tensors.empty(); });
  }
  co_return files;
}

Discovery discover_blocking(const Url& url, const StreamerOptions& options) {
  asio::io_context io;
  auto store = open_store(url, io.get_executor(), options.store);
  Discovery discovery;
  std::exception_ptr error;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> { discovery.files = co_await discover(*store, url, options); },
      [&](std::exception_ptr failure) {
        error = failure;
        io.stop();
      });
  io.run();
  if (error) std::rethrow_exception(error);
  discovery.io_mode = store->stats().io_mode;
  return discovery;
}

asio::awaitable<std::vector<SourceFile>> read_headers(ObjectStore& store,
                                                      std::vector<HeaderSource> sources,
                                                      std::size_t max_concurrency) {
  std::vector<SourceFile> files(sources.size());
  std::size_t next = 0;
  // Workers, not one coroutine per file: each read may open a connection (and a TLS handshake).
  const std::size_t workers = std::min(sources.size(), std::max<std::size_t>(max_concurrency, 1));
  co_await run_concurrently(workers, [&](std::size_t) -> asio::awaitable<void> {
    while (next < sources.size()) {
      const std::size_t i = next++;
      files[i] = co_await read_header(store, std::move(sources[i]));
    }
  });
  co_return files;
}

}  // namespace tensorstream::detail

namespace tensorstream {

Url resolve_url(const std::string& remote_path) {
  Url url = Url::parse(remote_path);
  if (url.scheme == "file") {
    std::error_code ec;
    url.path = std::filesystem::absolute(url.path, ec).string();
    if (!url.is_prefix() && std::filesystem::is_directory(url.path, ec)) url.path.push_back('/');
  } else if (const auto scheme = find_scheme(url.scheme);
             scheme && scheme->form == UrlForm::bucket && !url.is_prefix() &&
             !detail::ends_with(url.path, detail::safetensors_suffix) &&
             !detail::ends_with(url.path, detail::index_suffix) &&
             !detail::ends_with(url.path, detail::traw_suffix)) {
    url.path.push_back('/');
  }
  return url;
}

}  // namespace tensorstream
