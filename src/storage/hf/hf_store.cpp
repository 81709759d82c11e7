#include "tensorstream/storage/hf_store.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <utility>

#include "storage/builtin_schemes.hpp"
#include "storage/credential_cache.hpp"
#include "storage/hf/adapter.hpp"
#include "storage/hf/hf_cache.hpp"
#include "storage/hf/hub_api.hpp"
#include "storage/hf/hub_settings.hpp"
#include "storage/hf/repo_path.hpp"
#include "storage/http/http_client.hpp"
#include "storage/response_version.hpp"
#include "storage/request_checks.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {

// A revision document lists every file of the repository; a tree page a thousand entries.
constexpr std::size_t max_revision_document = 16 << 20;
constexpr std::size_t max_tree_page = 16 << 20;

const Url& checked_organisation(const Url& url) {
  if (url.scheme != "hf") throw InvalidArgument(url.str() + ": HfStore serves hf:// URLs only");
  if (url.host == "datasets" || url.host == "spaces") {
    throw InvalidArgument(url.str() + ": only model repositories are read, not " + url.host);
  }
  if (!hf::is_hub_name(url.host)) {
    throw InvalidArgument(url.str() + ": '" + url.host +
                          "' is no organisation or user name; name models as hf://ORG/NAME");
  }
  return url;
}

// A snapshot, and which of its files the local cache holds.
struct Pinned {
  HfSnapshot snapshot;
  std::set<std::string, std::less<>> cached;
};

// What the single-flight cache of snapshots keeps: a snapshot never expires.
struct PinnedEntry {
  std::shared_ptr<const Pinned> pinned;
  std::optional<std::chrono::system_clock::time_point> expiration{};
};

// The file at `path` of `snapshot`; nullptr when the commit has none.
const HfFile* find_file(const HfSnapshot& snapshot, std::string_view path) {
  const auto found = std::lower_bound(
      snapshot.files.begin(), snapshot.files.end(), path,
      [](const HfFile& file, std::string_view wanted) { return file.path < wanted; });
  if (found == snapshot.files.end() || found->path != path) return nullptr;
  return &*found;
}

}  // namespace

struct HfStore::Impl {
  std::string organisation;
  hf::HubSettings settings;
  std::string description;
  boost::asio::any_io_executor executor;
  FileOptions file_options;
  std::shared_ptr<HttpClient> client;  // Null offline.
  ObjectPins<ResponseVersion> pins;
  std::mutex mutex;                    // Guards snapshots and cache.
  // By the key's first segment ("/NAME@REV"): one resolution per revision, however many
  // requests want it at once.
  std::map<std::string, std::shared_ptr<CredentialCache<PinnedEntry>>, std::less<>> snapshots;
  std::unique_ptr<FileStore> cache;  // Made when the first cached file is read.

  // "hf://ORG/NAME@REV", which messages about the revision name, the revision spelled as in
  // the URL (a '/' in it percent-encoded) so that it can be pasted back.
  std::string revision_url(const hf::RepoPath& where) const {
    const bool named = where.repo_key.find('@') != std::string::npos;
    return "hf://" + organisation + where.repo_key + (named ? "" : "@" + where.revision);
  }

  boost::asio::awaitable<PinnedEntry> resolve(hf::RepoPath where) {
    const std::string url = revision_url(where);
    auto pinned = std::make_shared<Pinned>();
    if (settings.offline) {
      pinned->snapshot = hf::cached_snapshot(settings.cache_dir, where.repo, where.revision, url);
      for (const auto& file : pinned->snapshot.files) pinned->cached.insert(file.path);
    } else {
      pinned->snapshot = co_await from_hub(where, url);
      mark_cached(*pinned);
    }
    log(LogLevel::debug, [&] {
      return url + ": commit " + pinned->snapshot.commit + ", " +
             std::to_string(pinned->snapshot.files.size()) + " files, " +
             std::to_string(pinned->cached.size()) + " of them in the cache";
    });
    co_return PinnedEntry{std::move(pinned)};
  }

  boost::asio::awaitable<HfSnapshot> from_hub(const hf::RepoPath& where, const std::string& url) {
    HfSnapshot snapshot{where.repo, where.revision, {}, {}};
    const std::string revision =
        hf::revision_target(settings.path_prefix, where.repo, where.revision);
    const std::string document = co_await client->get_text(revision, url, max_revision_document);
    snapshot.commit = hf::parse_commit(document, url);
    std::optional<std::string> page = hf::tree_target(settings.path_prefix, where.repo,
                                                      snapshot.commit);
    std::set<std::string> pages_seen;
    while (page) {
      const std::string target = std::move(*page);
      // A server whose next page is one it sent already would page forever.
      if (!pages_seen.insert(target).second) {
        throw FormatError(url + ": malformed tree listing from the Hub: the page " + target +
                          " comes round again");
      }
      RequestBody get;
      const TextResponse response =
          co_await client->send(target, url, max_tree_page, std::move(get));
      auto files = hf::parse_tree_page(response.body, url);
      std::move(files.begin(), files.end(), std::back_inserter(snapshot.files));
      page = hf::next_page_target(response.link, settings.origin.origin(), url);
    }
    std::sort(snapshot.files.begin(), snapshot.files.end(),
              [](const HfFile& a, const HfFile& b) { return a.path < b.path; });
    co_return snapshot;
  }

  // A file counts as cached when the cache has it at the commit with the size the Hub lists:
  // huggingface_hub links a snapshot's file only once its blob is complete.
  void mark_cached(Pinned& pinned) const {
    if (!settings.read_cache || settings.cache_dir.empty()) return;
    for (const auto& file : pinned.snapshot.files) {
      std::error_code error;
      const auto path = hf::snapshot_file(settings.cache_dir, pinned.snapshot.repo,
                                          pinned.snapshot.commit, file.path);
      if (std::filesystem::file_size(path, error) == file.size && !error) {
        pinned.cached.insert(file.path);
      }
    }
  }

  boost::asio::awaitable<std::shared_ptr<const Pinned>> pinned(const hf::RepoPath& where) {
    std::shared_ptr<CredentialCache<PinnedEntry>> entry;
    {
      std::lock_guard lock(mutex);
      auto& slot = snapshots[where.repo_key];
      if (!slot) {
        slot = std::make_shared<CredentialCache<PinnedEntry>>(
            [this, where]() { return resolve(where); }, std::chrono::seconds(0),
            [] { return std::chrono::system_clock::now(); }, std::string());
      }
      entry = slot;
    }
    const PinnedEntry found = co_await entry->get();
    co_return found.pinned;
  }

  FileStore& cache_store() {
    std::lock_guard lock(mutex);
    if (!cache) cache = std::make_unique<FileStore>(executor, file_options);
    return *cache;
  }
};

HfStore::HfStore(boost::asio::any_io_executor executor, const Url& organisation, HttpOptions http,
                 HfOptions options, FileOptions file)
    : impl_(std::make_unique<Impl>()) {
  impl_->organisation = checked_organisation(organisation).host;
  impl_->settings = hf::resolve_hub_settings(options);
  impl_->executor = executor;
  impl_->file_options = std::move(file);
  const auto& settings = impl_->settings;
  impl_->description =
      settings.offline ? std::string("offline")
                       : settings.endpoint() + " (" +
                             (settings.token ? "token from " : "no token: ") +
                             settings.token_source + ")";
  impl_->description += settings.read_cache && !settings.cache_dir.empty()
                            ? ", cache " + settings.cache_dir.string()
                            : std::string(", cache not read");
  log(LogLevel::debug,
      [&] { return "hf://" + impl_->organisation + ": " + impl_->description; });
  if (!settings.offline) {
    impl_->client = std::make_shared<HttpClient>(
        std::move(executor), settings.origin, std::move(http),
        std::make_shared<hf::Adapter>(settings.token, settings.token_source,
                                      settings.endpoint()));
  }
}

HfStore::~HfStore() = default;

const std::string& HfStore::describe() const { return impl_->description; }

std::string HfStore::url(const std::string& key) const {
  return "hf://" + impl_->organisation + key;
}

boost::asio::awaitable<HfSnapshot> HfStore::snapshot(std::string key) {
  const auto where = hf::parse_repo_path(impl_->organisation, key, url(key));
  const auto pinned = co_await impl_->pinned(where);
  co_return pinned->snapshot;
}

boost::asio::awaitable<std::uint64_t> HfStore::size(std::string key) {
  const ObjectStat stat = co_await this->stat(std::move(key));
  co_return stat.size;
}

boost::asio::awaitable<ObjectStat> HfStore::stat(std::string key) {
  const std::string object = url(key);
  const auto where = hf::parse_repo_path(impl_->organisation, key, object);
  const auto pinned = co_await impl_->pinned(where);
  const HfFile* file = find_file(pinned->snapshot, where.path);
  if (file == nullptr) {
    throw NotFoundError(object, "no such file in commit " + pinned->snapshot.commit + " of " +
                                    where.repo + " (revision " + where.revision + ")");
  }
  // Not the commit, with which a cache keyed by version would miss the same bytes at every new
  // commit of the branch.
  co_return ObjectStat{file->size, ObjectVersion::content(file->blob)};
}

boost::asio::awaitable<std::vector<ObjectInfo>> HfStore::list(std::string prefix,
                                                              ListDepth depth) {
  const std::string listed = url(prefix);
  const auto where = hf::parse_repo_path(impl_->organisation, prefix, listed);
  if (prefix.back() != '/') {
    throw InvalidArgument(listed + ": a prefix to list ends with '/'");
  }
  const auto pinned = co_await impl_->pinned(where);
  std::vector<ObjectInfo> objects;
  for (const auto& file : pinned->snapshot.files) {
    if (!file.path.starts_with(where.path)) continue;
    if (depth == ListDepth::one_level &&
        file.path.find('/', where.path.size()) != std::string::npos) {
      continue;
    }
    objects.push_back(ObjectInfo{where.repo_key + "/" + file.path, file.size});
  }
  co_return objects;
}

boost::asio::awaitable<void> HfStore::read_range(std::string key, std::uint64_t offset,
                                                 std::span<std::byte> destination) {
  const std::string object = url(key);
  const auto where = hf::parse_repo_path(impl_->organisation, key, object);
  if (destination.empty()) co_return;
  check_byte_range(object, offset, destination.size());
  const auto pinned = co_await impl_->pinned(where);
  const HfSnapshot& snapshot = pinned->snapshot;
  const HfFile* file = find_file(snapshot, where.path);
  if (file == nullptr) {
    throw NotFoundError(object, "no such file in commit " + snapshot.commit + " of " +
                                    where.repo + " (revision " + where.revision + ")");
  }
  if (offset + destination.size() > file->size) {
    throw StorageError(object, "bytes " + std::to_string(offset) + "-" +
                                   std::to_string(offset + destination.size() - 1) +
                                   " lie past the end of the file (" +
                                   std::to_string(file->size) + " bytes)");
  }
  if (pinned->cached.contains(where.path)) {
    const std::string local = hf::snapshot_file(impl_->settings.cache_dir, snapshot.repo,
                                                snapshot.commit, file->path)
                                  .string();
    co_await impl_->cache_store().read_range(local, offset, destination);
    co_return;
  }
  ResponseVersion version = impl_->pins.find(key).value_or(ResponseVersion{});
  const std::string target =
      hf::resolve_target(impl_->settings.path_prefix, snapshot.repo, snapshot.commit, file->path);
  co_await impl_->client->read_range(target, object, offset, destination, version);
  pin_version(impl_->pins, key, object, version);
}

StoreStats HfStore::stats() const {
  StoreStats stats;
  if (impl_->client) {
    stats = impl_->client->stats();
  } else {
    stats.io_mode = "cache";
  }
  std::lock_guard lock(impl_->mutex);
  if (impl_->cache) {
    const StoreStats cached = impl_->cache->stats();
    stats.bytes += cached.bytes;
    stats.direct_bytes += cached.direct_bytes;
  }
  return stats;
}

std::unique_ptr<ObjectStore> open_hf_store(const Url& url, boost::asio::any_io_executor executor,
                                           const StoreOptions& options) {
  return std::make_unique<HfStore>(std::move(executor), url, options.http(), options.hf(),
                                   options.file());
}

void apply_hf_settings(const CommonStoreSettings& settings, StoreOptions& options) {
  if (settings.anonymous) options.hf().anonymous = true;
}

}  // namespace tensorstream
