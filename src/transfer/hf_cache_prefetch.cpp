#include "tensorstream/transfer/hf_cache.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <algorithm>
#include <fstream>
#include <system_error>
#include <unistd.h>

#include "base/blocking_run.hpp"
#include "storage/hf/hf_cache.hpp"
#include "storage/hf/hub_settings.hpp"
#include "storage/hf/repo_path.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/cached_store.hpp"
#include "tensorstream/storage/hf_store.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/resolve_url.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

void check(const std::error_code& error, const fs::path& path, const char* what) {
  if (error) throw StorageError(path.string(), std::string(what) + ": " + error.message());
}

// A name beside `path` that no other process picks: ".NAME.tensorstream-PID.tmp".
fs::path temporary_beside(const fs::path& path) {
  return path.parent_path() /
         ("." + path.filename().string() + ".tensorstream-" + std::to_string(::getpid()) + ".tmp");
}

// Makes the file prefetch() wrote at `file` the cache's `blob` (unless the blob is there
// already) and puts a symbolic link to the blob in its place, as huggingface_hub lays files out. The link
// is made beside and renamed over the file, so the snapshot's path never goes missing.
void link_to_blob(const fs::path& file, const fs::path& blob) {
  std::error_code error;
  fs::create_directories(blob.parent_path(), error);
  check(error, blob.parent_path(), "cannot create the directory");
  if (!fs::exists(blob, error)) {
    // A second name for the same inode, renamed into place: the blob appears whole or not at all.
    const fs::path next = temporary_beside(blob);
    fs::remove(next, error);
    fs::create_hard_link(file, next, error);
    check(error, next, "cannot add the file to the cache's blobs");
    fs::rename(next, blob, error);
    check(error, blob, "cannot add the file to the cache's blobs");
  }
  const fs::path link = temporary_beside(file);
  fs::remove(link, error);
  fs::create_symlink(blob.lexically_relative(file.parent_path()), link, error);
  check(error, link, "cannot link the snapshot's file to its blob");
  fs::rename(link, file, error);
  check(error, file, "cannot put the link to its blob in place");
}

}  // namespace

asio::awaitable<HfCachePrefetchResult> prefetch_to_hf_cache(std::string url,
                                                            PrefetchOptions options) {
  Url source = resolve_url(url);
  if (source.scheme != "hf") {
    throw InvalidArgument(url + ": only hf:// repositories go into the Hugging Face cache");
  }
  if (!source.is_prefix()) source.path.push_back('/');
  const hf::HubSettings settings = hf::resolve_hub_settings(options.store.hf());
  if (settings.cache_dir.empty()) {
    throw InvalidArgument("the Hugging Face cache is nowhere: set HF_HUB_CACHE, HF_HOME or HOME");
  }
  const auto where = hf::parse_repo_path(source.host, source.path, source.str());
  const auto executor = co_await asio::this_coro::executor;
  const auto opened = open_store(source, executor, options.store);
  // A configured cache wraps the Hub's store: the commit and its blobs are the Hub's to tell,
  // while the bytes are read through the cache, as every other stream's are.
  auto* const cached = dynamic_cast<CachedStore*>(opened.get());
  auto& hub = dynamic_cast<HfStore&>(cached ? cached->source() : *opened);
  const HfSnapshot snapshot = co_await hub.snapshot(source.path);
  const fs::path root = hf::repo_folder(settings.cache_dir, snapshot.repo);
  const fs::path snapshot_dir = root / "snapshots" / snapshot.commit;
  const fs::path target = snapshot_dir / where.path;

  HfCachePrefetchResult result;
  result.files = co_await prefetch(*opened, source.path, target, std::move(options));
  result.commit = snapshot.commit;
  result.snapshot = snapshot_dir;
  for (const auto& relative : result.files.files) {
    const std::string path = where.path + relative;
    const auto file = std::lower_bound(
        snapshot.files.begin(), snapshot.files.end(), path,
        [](const HfFile& entry, const std::string& wanted) { return entry.path < wanted; });
    if (file == snapshot.files.end() || file->path != path) {
      throw StorageError(source.str(), path + " was copied but is not in commit " +
                                           snapshot.commit);
    }
    link_to_blob(target / relative, root / "blobs" / file->blob);
  }
  if (snapshot.revision != snapshot.commit) {
    const fs::path ref = root / "refs" / snapshot.revision;
    std::error_code error;
    fs::create_directories(ref.parent_path(), error);
    check(error, ref.parent_path(), "cannot create the directory");
    // Renamed into place: a reader never sees an empty ref.
    const fs::path next = temporary_beside(ref);
    std::ofstream out(next, std::ios::binary | std::ios::trunc);
    out << snapshot.commit;
    out.close();
    if (!out) throw StorageError(next.string(), "cannot write the revision's commit");
    fs::rename(next, ref, error);
    check(error, ref, "cannot replace the revision's commit");
  }
  co_return result;
}

HfCachePrefetchResult prefetch_to_hf_cache_blocking(std::string url, PrefetchOptions options) {
  asio::io_context io;
  HfCachePrefetchResult result;
  detail::run_blocking(io, [&]() -> asio::awaitable<void> {
    result = co_await prefetch_to_hf_cache(std::move(url), std::move(options));
  }());
  return result;
}

}  // namespace tensorstream
