#include "tensorstream/transfer/prefetch.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <optional>
#include <system_error>

#include "async/run_on_strand.hpp"
#include "base/blocking_run.hpp"
#include "base/name_patterns.hpp"
#include "model/unlisted_model_files.hpp"
#include "storage/relative_key.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/file_store.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/resolve_url.hpp"
#include "tensorstream/transfer/copy_objects.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

// One object to copy.
struct Copy {
  std::string key;
  std::string relative;  // Its path below the prefix, and so below the local directory.
  std::uint64_t size = 0;
};

void validate(const PrefetchOptions& options) {
  if (options.max_concurrency == 0) {
    throw InvalidArgument("prefetch: max_concurrency must be at least 1");
  }
  if (options.chunk_size == 0) {
    throw InvalidArgument("prefetch: chunk_size must be at least 1 byte");
  }
  detail::NamePatterns{options.include, options.exclude}.check("object path");
}

void make_directories(const fs::path& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) throw StorageError(directory.string(), "cannot create the directory: " + ec.message());
}

// The objects to copy, in key order; `candidates` gets the paths the patterns chose from.
std::vector<Copy> select(ObjectStore& store, const std::string& prefix,
                         std::vector<ObjectInfo> objects, const std::string& destination,
                         const PrefetchOptions& options, std::vector<std::string>& candidates) {
  const detail::NamePatterns patterns{options.include, options.exclude};
  std::vector<Copy> copies;
  for (auto& object : objects) {
    const std::string_view key = object.key;
    if (key.ends_with('/')) continue;  // a directory placeholder, not a file
    const auto relative = key.starts_with(prefix) ? key.substr(prefix.size()) : std::string_view();
    // Applied at every depth: the Python original missed nested weights.
    if (options.exclude_safetensors && relative.ends_with(".safetensors")) continue;
    const auto excluded = [&](const std::string& suffix) { return relative.ends_with(suffix); };
    if (std::any_of(options.exclude_suffixes.begin(), options.exclude_suffixes.end(), excluded)) {
      continue;
    }
    candidates.emplace_back(relative);
    if (!patterns.selects(candidates.back())) continue;
    if (!detail::is_relative_key_inside(relative)) {
      throw StorageError(store.url(object.key),
                         "cannot be copied into " + destination +
                             ": its key is not a plain relative path below " + store.url(prefix));
    }
    copies.push_back({std::move(object.key), std::string(relative), object.size});
  }
  return copies;
}

asio::awaitable<PrefetchResult> copy_all(ObjectStore& source, std::string prefix,
                                         ObjectStore& destination, std::string destination_prefix,
                                         PrefetchOptions options) {
  const bool listed = source.can_list();
  std::vector<ObjectInfo> objects;
  if (listed) {
    objects = co_await source.list(prefix, ListDepth::recursive);
  } else {
    objects = co_await detail::unlisted_model_files(source, prefix, options.max_concurrency,
                                                    !options.exclude_safetensors);
  }
  // A mistyped prefix, not a model without artifacts: nothing is created.
  if (objects.empty()) {
    throw NotFoundError(source.url(prefix),
                        listed ? "nothing under this prefix"
                               : "none of the files a model directory holds is there (this "
                                 "store cannot list; config.json, tokenizer.json, ... were asked "
                                 "for by name)");
  }
  std::string name = destination.url(destination_prefix);
  name.pop_back();  // The directory or prefix without its '/', as users name it.
  std::vector<std::string> candidates;
  const auto copies = select(source, prefix, std::move(objects), name, options, candidates);
  const detail::NamePatterns patterns{options.include, options.exclude};
  if (copies.empty() && !patterns.empty()) {
    throw NotFoundError(source.url(prefix),
                        patterns.nothing_taken(candidates, "object under this prefix"));
  }
  std::vector<ObjectCopy> transfers;
  for (const auto& copy : copies) {
    transfers.push_back({copy.key, copy.size, destination_prefix + copy.relative});
  }
  CopyOptions copy_options{.max_concurrency = options.max_concurrency,
                           .chunk_size = options.chunk_size};
  co_await copy_objects(source, std::move(transfers), destination, std::move(copy_options));
  PrefetchResult result;
  for (const auto& copy : copies) {
    result.files.push_back(copy.relative);
    result.bytes += copy.size;
  }
  co_return result;
}

// "dir/" for the directory `local_path`: the key prefix of its files in a FileStore.
std::string directory_prefix(const fs::path& local_path) {
  std::string prefix = local_path.string();
  if (!prefix.ends_with('/')) prefix += '/';
  return prefix;
}

}  // namespace

asio::awaitable<PrefetchResult> prefetch(ObjectStore& source, std::string prefix,
                                         ObjectStore& destination,
                                         std::string destination_prefix,
                                         PrefetchOptions options) {
  validate(options);
  if (!destination_prefix.ends_with('/')) destination_prefix += '/';
  if (!destination.can_write()) {
    // The store's own refusal says why.
    destination.create_writer(destination_prefix + "config.json");
  }
  // The copies share state, so they run on one strand even when the caller's executor has
  // several threads.
  const auto strand = asio::make_strand(co_await asio::this_coro::executor);
  auto work = copy_all(source, std::move(prefix), destination, std::move(destination_prefix),
                       std::move(options));
  co_return co_await async::run_on_strand(strand, std::move(work));
}

asio::awaitable<PrefetchResult> prefetch(ObjectStore& store, std::string prefix,
                                         fs::path local_path, PrefetchOptions options) {
  if (local_path.empty()) throw InvalidArgument("prefetch needs a local directory, not ''");
  FileStore files(co_await asio::this_coro::executor, options.store.file());
  auto result = co_await prefetch(store, std::move(prefix), files, directory_prefix(local_path),
                                  std::move(options));
  // Created even when every object was excluded (a prefix of weights alone).
  make_directories(local_path);
  co_return result;
}

asio::awaitable<PrefetchResult> prefetch(std::string remote_path, fs::path destination,
                                         PrefetchOptions options) {
  Url url = resolve_url(remote_path);
  if (!url.is_prefix()) url.path.push_back('/');
  const auto executor = co_await asio::this_coro::executor;
  const auto source = open_store(url, executor, options.store);
  const std::string target = destination.string();
  if (target.find("://") == std::string::npos || target.starts_with("file://")) {
    const fs::path local_path = target.starts_with("file://") ? Url::parse(target).path : target;
    co_return co_await prefetch(*source, url.path, local_path, std::move(options));
  }
  const Url destination_url = Url::parse(target);
  const auto store = open_store(destination_url, executor, options.store);
  co_return co_await prefetch(*source, url.path, *store, destination_url.path,
                              std::move(options));
}

PrefetchResult prefetch_blocking(std::string remote_path, fs::path local_path,
                                 PrefetchOptions options) {
  asio::io_context io;
  std::optional<PrefetchResult> result;
  detail::run_blocking(io, [&]() -> asio::awaitable<void> {
    result = co_await prefetch(std::move(remote_path), std::move(local_path), std::move(options));
  }());
  return std::move(*result);
}

}  // namespace tensorstream
