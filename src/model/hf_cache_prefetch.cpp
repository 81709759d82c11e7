#include "tensorstream/model/hf_cache.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <algorithm>
#include <fstream>
#include <system_error>

#include "model/write_destination.hpp"
#include "storage/hf/hf_cache.hpp"
#include "storage/hf/hub_settings.hpp"
#include "storage/hf/repo_path.hpp"
#include "tensorstream/error.hpp"
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

// Moves the file prefetch() wrote at `file` into `blob` (or drops it, when the blob is there
// already) and links `file` to the blob, as huggingface_hub lays files out.
void link_to_blob(const fs::path& file, const fs::path& blob) {
  std::error_code error;
  fs::create_directories(blob.parent_path(), error);
  check(error, blob.parent_path(), "cannot create the directory");
  if (fs::exists(blob, error)) {
    fs::remove(file, error);
    check(error, file, "cannot remove");
  } else {
    fs::rename(file, blob, error);
    check(error, blob, "cannot move the file into the cache's blobs");
  }
  fs::create_symlink(blob.lexically_relative(file.parent_path()), file, error);
  check(error, file, "cannot link the snapshot's file to its blob");
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
  const auto opened = open_store(source, co_await asio::this_coro::executor, options.store);
  auto& hub = dynamic_cast<HfStore&>(*opened);
  const HfSnapshot snapshot = co_await hub.snapshot(source.path);
  const fs::path root = hf::repo_folder(settings.cache_dir, snapshot.repo);
  const fs::path snapshot_dir = root / "snapshots" / snapshot.commit;
  const fs::path target = snapshot_dir / where.path;

  HfCachePrefetchResult result;
  result.files = co_await prefetch(hub, source.path, target, std::move(options));
  result.commit = snapshot.commit;
  result.snapshot = snapshot_dir;
  for (const auto& relative : result.files.files) {
    const std::string path = where.path + relative;
    const auto file = std::lower_bound(
        snapshot.files.begin(), snapshot.files.end(), path,
        [](const HfFile& entry, const std::string& wanted) { return entry.path < wanted; });
    link_to_blob(target / relative, root / "blobs" / file->blob);
  }
  if (snapshot.revision != snapshot.commit) {
    const fs::path ref = root / "refs" / snapshot.revision;
    std::error_code error;
    fs::create_directories(ref.parent_path(), error);
    check(error, ref.parent_path(), "cannot create the directory");
    std::ofstream out(ref, std::ios::binary | std::ios::trunc);
    out << snapshot.commit;
    out.close();
    if (!out) throw StorageError(ref.string(), "cannot write the revision's commit");
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
