#include "tensorstream/storage/cached_store.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <linux/capability.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <sstream>

#include "async/run_on_thread.hpp"
#include "base/byte_size.hpp"
#include "base/environment_setting.hpp"
#include "base/exception_message.hpp"
#include "storage/cache/cache_entry.hpp"
#include "storage/cache/cache_floor.hpp"
#include "storage/cache/cache_layout.hpp"
#include "storage/cache/open_entries.hpp"
#include "storage/cache/write_behind.hpp"
#include "storage/file/read_pieces.hpp"
#include "storage/request_checks.hpp"
#include "tensorstream/async/library_thread.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace tensorstream {

using detail::CacheEntry;
using detail::EntryInfo;
using detail::Segment;

namespace {

// Threads that read and write entries. Reads from a cold page cache wait for the disk, and
// each thread has one read in flight: enough of them keep a fast disk's queue full.
constexpr unsigned cache_threads = 8;

// Threads that write copies of fetched ranges: writes to one file take turns, so two serve a
// model of several files.
constexpr unsigned writer_threads = 2;

// Reads, in any store of this process, waiting for bytes queued for a writer.
std::atomic<int> reads_awaiting_writes{0};

// Whether a thread of this process that drops to SCHED_IDLE (it runs only when no other thread
// wants the processor) may return to SCHED_OTHER: anyone may drop, but returning needs
// CAP_SYS_NICE or an RLIMIT_NICE that allows nice 0 (20), which an unprivileged container lacks.
// Threads inherit the capabilities of the thread that made them.
bool can_leave_idle_priority() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NICE, &limit) == 0 && limit.rlim_cur >= 20) return true;
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3]{};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_TO_INDEX(CAP_SYS_NICE)].effective & CAP_TO_MASK(CAP_SYS_NICE)) != 0;
}

// Sets the calling thread's scheduling policy; whether the system let it.
bool schedule_calling_thread(int policy) {
  const sched_param parameters{};
  return ::sched_setscheduler(0, policy, &parameters) == 0;
}

// What this process has learnt of a cache directory, shared by its stores: a cache that cannot
// be written is used read-only from then on, and each kind of trouble is warned of once.
struct CacheHealth {
  std::atomic<bool> read_only{false};
  std::atomic<bool> warned_unreadable{false};
  std::atomic<bool> warned_floor{false};
};

CacheHealth& health_of(const fs::path& root) {
  static std::mutex mutex;
  // Never freed: a long-running process names few cache directories.
  static std::map<fs::path, std::unique_ptr<CacheHealth>>* const healths =
      new std::map<fs::path, std::unique_ptr<CacheHealth>>;
  std::lock_guard lock(mutex);
  auto& health = (*healths)[fs::absolute(root).lexically_normal()];
  if (!health) health = std::make_unique<CacheHealth>();
  return *health;
}

std::string depth_name(ListDepth depth) { return depth == ListDepth::recursive ? "all" : "one"; }

// A listing as the cache keeps it: a line per object ("o SIZE KEY") and per prefix ("p KEY").
std::string encode_listing(const std::vector<ObjectInfo>& objects,
                           const std::vector<std::string>& prefixes) {
  std::string text = "tensorstream-listing 1\n";
  for (const auto& object : objects) {
    text += "o " + std::to_string(object.size) + " " + object.key + "\n";
  }
  for (const auto& prefix : prefixes) text += "p " + prefix + "\n";
  return text;
}

bool decode_listing(const std::string& text, Listing& listing) {
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line != "tensorstream-listing 1") return false;
  while (std::getline(lines, line)) {
    if (line.rfind("p ", 0) == 0) {
      listing.prefixes.push_back(line.substr(2));
    } else if (line.rfind("o ", 0) == 0) {
      const auto space = line.find(' ', 2);
      if (space == std::string::npos) return false;
      ObjectInfo object;
      try {
        object.size = std::stoull(line.substr(2, space - 2));
      } catch (const std::exception&) {
        return false;
      }
      object.key = line.substr(space + 1);
      listing.objects.push_back(std::move(object));
    } else {
      return false;
    }
  }
  return true;
}

// The listing saved in `file`, for offline use.
Listing saved_listing(const fs::path& file, const std::string& prefix_url, const fs::path& root) {
  Listing listing;
  const auto text = detail::read_small_file(file);
  if (!text || !decode_listing(*text, listing)) {
    throw NotFoundError(prefix_url, "no listing of it in the cache " + root.string() +
                                        " (--cache-mode offline asks the source nothing)");
  }
  return listing;
}

bool listable(const std::vector<ObjectInfo>& objects, const std::vector<std::string>& prefixes) {
  const auto has_break = [](const std::string& key) {
    return key.find_first_of("\r\n") != std::string::npos;
  };
  return std::none_of(objects.begin(), objects.end(),
                      [&](const ObjectInfo& object) { return has_break(object.key); }) &&
         std::none_of(prefixes.begin(), prefixes.end(), has_break);
}

}  // namespace

// What the store's coroutines and its threads share; the threads hold it while they work.
struct CachedStore::State {
  ResolvedCache cache;
  fs::path root;
  CacheHealth* health = nullptr;
  std::uint64_t min_free = 0;  // bytes of the file system the cache leaves free
  // Whether the writers drop to idle priority, which they may only where they can come back.
  bool writers_idle = false;

  asio::io_context io{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work{
      io.get_executor()};
  std::vector<async::LibraryThread> threads;

  // The writes of fill_later(), on threads of their own, so that the copies and reads of later
  // ranges never queue behind them.
  asio::io_context writes{1};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> writes_work{
      writes.get_executor()};
  std::vector<async::LibraryThread> writers;

  // The entry of each key, once asked for: null where the object is not cached.
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<CacheEntry>> entries;

  // Entries open one at a time, so that each counts the room the others took: the entries
  // this store may fill, with their objects' sizes.
  std::mutex opening;
  std::vector<std::pair<fs::path, std::uint64_t>> admitted;

  // Bytes being written to entries now, which the free space does not show yet.
  std::mutex room_mutex;
  std::uint64_t writing = 0;
  std::atomic<bool> stopped_filling{false};

  std::atomic<std::uint64_t> cached_bytes{0};
  std::atomic<std::uint64_t> direct_bytes{0};  // of those, read with direct I/O

  std::shared_ptr<detail::WriteBehind> write_behind;

  // The recording thread: entries with ranges written and not yet recorded.
  std::mutex sync_mutex;
  std::condition_variable sync_wake;
  std::set<std::shared_ptr<CacheEntry>> unrecorded;
  bool stopping = false;
  async::LibraryThread recorder;

  bool online() const { return cache.mode != CacheMode::offline; }
  bool writable() const { return cache.mode == CacheMode::readwrite && !health->read_only; }
  bool filling() const { return writable() && !stopped_filling; }

  // A write to the cache failed: it is read-only for the rest of the process.
  void failed_to_write(const std::exception& error) {
    const bool first = !health->read_only.exchange(true);
    log(first ? LogLevel::warning : LogLevel::debug, [&] {
      return "cache " + root.string() + ": " + error.what() +
             "; the cache is used read-only from here on";
    });
  }

  // A read from the cache failed: the bytes come from the source.
  void failed_to_read(const std::exception& error) {
    const bool first = !health->warned_unreadable.exchange(true);
    log(first ? LogLevel::warning : LogLevel::debug, [&] {
      return "cache " + root.string() + ": " + error.what() + "; reading from the source instead";
    });
  }

  void stop_filling(const std::string& why) {
    stopped_filling = true;
    const bool first = !health->warned_floor.exchange(true);
    log(first ? LogLevel::warning : LogLevel::debug,
        [&] { return "cache " + root.string() + ": " + why; });
  }

  std::string floor_text() const {
    return format_byte_size(min_free) + " free (--cache-min-free)";
  }

  // Takes room for writing `bytes` more: the file system keeps its floor, with entries that no
  // process uses removed to keep it; false, and the cache stops filling, where it cannot.
  bool take_room(std::uint64_t bytes) {
    std::lock_guard lock(room_mutex);
    const auto space = detail::disk_space(root);
    if (space && space->available < min_free + writing + bytes) {
      detail::RoomRequest request;
      request.needed = bytes;
      request.min_free = min_free;
      request.pending_writes = writing;
      if (detail::make_room(root, request) != detail::Room::made) {
        stop_filling("stopped filling: the disk keeps " + floor_text());
        return false;
      }
    }
    writing += bytes;
    return true;
  }

  void give_room(std::uint64_t bytes) {
    std::lock_guard lock(room_mutex);
    writing -= bytes;
  }

  void record_loop() {
    std::unique_lock lock(sync_mutex);
    for (;;) {
      sync_wake.wait(lock, [&] { return stopping || !unrecorded.empty(); });
      if (unrecorded.empty() && stopping) return;
      auto batch = std::move(unrecorded);
      unrecorded.clear();
      lock.unlock();
      for (const auto& entry : batch) {
        try {
          const std::uint64_t recorded = entry->commit();
          log(LogLevel::debug, [&] {
            return entry->info().url + ": " + format_byte_size(recorded) +
                   " recorded in the cache " + entry->directory().string();
          });
        } catch (const std::exception& error) {
          // The ranges stay unrecorded, and a later load fetches them again.
          failed_to_write(error);
        }
      }
      lock.lock();
    }
  }

  void written(const std::shared_ptr<CacheEntry>& entry) {
    {
      std::lock_guard lock(sync_mutex);
      unrecorded.insert(entry);
    }
    sync_wake.notify_one();
  }

  // Writes `bytes`, the object's from `offset`, to `entry` (on a cache or a writer thread); false
  // when they were not written, which leaves them to a later load.
  bool fill(const std::shared_ptr<CacheEntry>& entry, std::uint64_t offset,
            std::span<const std::byte> bytes) {
    if (!filling() || !take_room(bytes.size())) return false;
    bool wrote = false;
    try {
      wrote = entry->fill(offset, bytes);
    } catch (const std::exception& error) {
      failed_to_write(error);
    }
    give_room(bytes.size());
    if (wrote) written(entry);
    return wrote;
  }

  // Copies `bytes` for a fill that a writer thread runs later (called on a cache thread); false
  // when the copies waiting already hold the limit.
  bool fill_later(const std::shared_ptr<CacheEntry>& entry, std::uint64_t offset,
                  std::span<const std::byte> bytes) {
    auto buffer = write_behind->take(bytes.size());
    if (!buffer) return false;
    std::memcpy(buffer->data(), bytes.data(), bytes.size());
    auto copy = std::make_shared<detail::WriteBehind::Buffer>(std::move(*buffer));
    entry->queue(offset, bytes.size());
    asio::post(writes, [this, entry, offset, copy, size = bytes.size()] {
      if (writers_idle) {
        const bool awaited = write_behind->hurried() || reads_awaiting_writes.load() > 0;
        if (!schedule_calling_thread(awaited ? SCHED_OTHER : SCHED_IDLE)) {
          log(LogLevel::debug, "cache: a writer could not change its priority");
        }
      }
      fill(entry, offset, std::span<const std::byte>(copy->data(), size));
      entry->unqueue(offset, size);
      write_behind->give_back(std::move(*copy));
    });
    return true;
  }

  // Whether an entry of `info` (at `directory`) may be filled: the cache's entries, with the
  // room the others this store fills will take, stay within --cache-size, and the disk keeps
  // its floor, with least recently used entries no process uses removed to make it so.
  bool admit(const EntryInfo& info, const fs::path& directory) {
    // What an entry takes on disk once full: its data, the blocks of its info file and journal,
    // and the data file's last block.
    const auto full_size = [](std::uint64_t size) { return size + (std::uint64_t{16} << 10); };
    const std::uint64_t held =
        fs::exists(directory / "info") ? detail::entry_disk_bytes(directory) : 0;
    std::uint64_t others = 0;  // what the others will still take
    for (const auto& [other, size] : admitted) {
      if (other == directory) continue;
      others += full_size(size) - std::min(full_size(size), detail::entry_disk_bytes(other));
    }
    if (held >= info.size) {  // nothing to add: a stream of what the entry holds
      admitted.emplace_back(directory, info.size);
      return true;
    }
    const detail::RoomRequest request{.needed = full_size(info.size) - held,
                                      .max_size = cache.max_size,
                                      .counted_beside = others,
                                      .min_free = min_free,
                                      .pending_writes = others,
                                      .keep = directory};
    switch (detail::make_room(root, request)) {
      case detail::Room::made:
        admitted.emplace_back(directory, info.size);
        return true;
      case detail::Room::over_size:
        log(LogLevel::info, [&] {
          return info.url + ": not cached: " + format_byte_size(info.size) +
                 " does not fit in --cache-size " + format_byte_size(*cache.max_size) +
                 " beside the entries in use";
        });
        return false;
      case detail::Room::under_floor:
        log(health->warned_floor.exchange(true) ? LogLevel::info : LogLevel::warning, [&] {
          return "cache " + root.string() + ": " + info.url + " (" +
                 format_byte_size(info.size) + ") is not cached: the disk keeps " + floor_text();
        });
        return false;
    }
    return false;
  }

  // The entry of `info`, opened (made first, where this store fills the cache); null where the
  // object is not cached. Throws what the cache's files throw.
  std::shared_ptr<CacheEntry> open_entry(const EntryInfo& info) {
    if (!detail::cacheable(info)) {
      log(LogLevel::info, info.url + ": not cached: its source reports no version");
      return nullptr;
    }
    const fs::path directory = detail::entry_directory(root, info);
    std::lock_guard lock(opening);
    bool fills = filling();
    if (auto shared = detail::shared_entry(directory, fills)) {
      // Another store's unsettled entry, which it fetches anew.
      if (online() && !shared->info().version.settled()) return nullptr;
      return shared;
    }
    if (online()) {
      const auto existing = detail::read_entry_info(directory);
      if (existing && !existing->version.settled()) {
        // Filled within a second of the object's last change, which a same-second rewrite
        // keeps its version through: its bytes may be another write's, so it is made anew.
        if (!fills || !detail::remove_entry_if_unused(directory)) return nullptr;
        log(LogLevel::info, [&] {
          return info.url + ": the cache's entry was filled within a second of the object's "
                            "last change; fetching it again";
        });
      }
    }
    if (fills) fills = admit(info, directory);
    std::shared_ptr<CacheEntry> opened;
    if (fills) {
      try {
        detail::create_entry(root, info);
        opened = CacheEntry::open(directory, info, true);
        if (!opened) {
          // Evicted between its creation and its opening: once more.
          detail::create_entry(root, info);
          opened = CacheEntry::open(directory, info, true);
        }
      } catch (const std::exception& error) {
        failed_to_write(error);
      }
    }
    if (!opened) opened = CacheEntry::open(directory, info, false);
    if (opened) detail::share_entry(directory, opened);
    return opened;
  }
};

namespace {

// Runs `work` (blocking file work) on the cache's threads.
template <class Work>
auto on_cache_threads(asio::io_context& io, Work work) -> asio::awaitable<decltype(work())> {
  return async::run_on(io.get_executor(), std::move(work));
}

std::optional<CacheMode> cache_mode_from(const detail::EnvironmentSetting& setting) {
  const auto mode = parse_cache_mode(setting.value);
  if (!mode) {
    throw InvalidArgument(setting.variable + "=" + setting.value +
                          ": not a cache mode (readwrite, read, offline or off)");
  }
  return mode;
}

}  // namespace

std::optional<CacheMode> parse_cache_mode(std::string_view name) {
  if (name == "readwrite") return CacheMode::readwrite;
  if (name == "read") return CacheMode::read;
  if (name == "offline") return CacheMode::offline;
  if (name == "off") return CacheMode::off;
  return std::nullopt;
}

std::string_view cache_mode_name(CacheMode mode) {
  switch (mode) {
    case CacheMode::read:
      return "read";
    case CacheMode::offline:
      return "offline";
    case CacheMode::off:
      return "off";
    default:
      return "readwrite";
  }
}

std::optional<ResolvedCache> resolve_cache(const StoreOptions& options) {
  const CacheOptions* given = options.find<CacheOptions>();
  ResolvedCache cache;
  if (given && given->directory) {
    cache.directory = *given->directory;
  } else if (const auto setting = detail::environment_setting("CACHE_DIR")) {
    cache.directory = setting->value;
  }
  if (given && given->mode) {
    cache.mode = *given->mode;
  } else if (const auto setting = detail::environment_setting("CACHE_MODE")) {
    cache.mode = *cache_mode_from(*setting);
  }
  if (given && given->max_size) {
    cache.max_size = given->max_size;
  } else if (const auto setting = detail::environment_setting("CACHE_SIZE")) {
    cache.max_size = detail::positive_byte_size(*setting);
  }
  if (given && given->min_free) {
    cache.min_free = *given->min_free;
  } else if (const auto floor = detail::environment_cache_floor()) {
    cache.min_free = *floor;
  }
  if (cache.directory.empty() || cache.mode == CacheMode::off) return std::nullopt;
  return cache;
}

CachedStore::CachedStore(std::unique_ptr<ObjectStore> source, ResolvedCache cache,
                         asio::any_io_executor)
    : source_(std::move(source)), state_(std::make_shared<State>()) {
  State& state = *state_;
  state.cache = std::move(cache);
  state.root = state.cache.directory;
  state.health = &health_of(state.root);
  state.write_behind =
      std::make_shared<detail::WriteBehind>(static_cast<std::size_t>(state.cache.write_behind));
  detail::register_write_behind(state.write_behind);
  // A model's own directory given as the cache would get objects/ and listings/ among its files,
  // which the next prefetch or copy of the model would take for files of the model.
  if (detail::holds_other_files(state.root)) {
    throw InvalidArgument(state.root.string() +
                          ": not a cache directory (it holds files but no objects/); give a "
                          "new or empty directory for the cache");
  }
  if (state.writable()) {
    std::error_code error;
    fs::create_directories(state.root / "objects", error);
    if (error) {
      state.failed_to_write(StorageError(state.root.string(),
                                         "cannot create the cache directory: " + error.message()));
    }
  }
  if (const auto space = detail::disk_space(state.root)) {
    state.min_free = state.cache.min_free.bytes_on(space->total);
  }
  state.writers_idle = can_leave_idle_priority();
  for (unsigned i = 0; i < cache_threads; ++i) {
    state.threads.emplace_back("ts-cache", [state = state_.get()] { state->io.run(); });
  }
  for (unsigned i = 0; i < writer_threads; ++i) {
    state.writers.emplace_back("ts-cache-wr", [state = state_.get()] {
      if (state->writers_idle) schedule_calling_thread(SCHED_IDLE);
      state->writes.run();
    });
  }
  state.recorder = async::LibraryThread("ts-cache-rec", [state = state_.get()] {
    state->record_loop();
  });
  if (state.writable()) {
    // What killed processes left behind counts against the cache's room until it is gone.
    asio::post(state.io, [root = state.root] { detail::sweep_abandoned(root); });
  }
}

CachedStore::~CachedStore() {
  // The writes still waiting first, then the recorder, which records them.
  state_->work.reset();
  for (auto& thread : state_->threads) thread.join();
  state_->write_behind->hurry();
  state_->writes_work.reset();
  for (auto& thread : state_->writers) thread.join();
  {
    std::lock_guard lock(state_->sync_mutex);
    state_->stopping = true;
  }
  state_->sync_wake.notify_one();
  state_->recorder.join();
}

std::string CachedStore::url(const std::string& key) const { return source_->url(key); }

std::string CachedStore::object_identity(const std::string& key) const {
  return source_->object_identity(key);
}

asio::awaitable<std::uint64_t> CachedStore::size(std::string key) {
  const ObjectStat found = co_await stat(std::move(key));
  co_return found.size;
}

asio::awaitable<ObjectStat> CachedStore::stat(std::string key) {
  if (state_->online()) co_return co_await source_->stat(std::move(key));
  const std::string url = source_->url(key);
  const std::string identity = source_->object_identity(key);
  const auto state = state_;
  auto lookup = on_cache_threads(state->io, [state, identity]() -> std::optional<ObjectStat> {
    std::optional<detail::EntryOnDisk> newest;
    for (auto& entry : detail::list_entries(state->root)) {
      if (entry.info.key() != identity || !detail::cacheable(entry.info)) continue;
      if (!newest || entry.last_used > newest->last_used) newest = std::move(entry);
    }
    if (!newest) return std::nullopt;
    return ObjectStat{newest->info.size, newest->info.version};
  });
  const std::optional<ObjectStat> found = co_await std::move(lookup);
  if (!found) {
    throw NotFoundError(url, "not in the cache " + state->root.string() +
                                 " (--cache-mode offline asks the source nothing)");
  }
  co_return *found;
}

// Offline, a source that cannot list (http(s)://) is read as online, through the files a
// stream finds without a listing (a model's index), which the cache keeps like any object.
bool CachedStore::can_list() const { return source_->can_list(); }

asio::awaitable<std::vector<ObjectInfo>> CachedStore::list(std::string prefix, ListDepth depth) {
  const std::string prefix_url = source_->url(prefix);
  const fs::path file = detail::listing_file(state_->root, prefix_url, depth_name(depth));
  if (!state_->online()) co_return saved_listing(file, prefix_url, state_->root).objects;
  std::vector<ObjectInfo> objects = co_await source_->list(std::move(prefix), depth);
  const std::vector<std::string> no_prefixes;
  if (listable(objects, no_prefixes)) {
    std::string text = encode_listing(objects, no_prefixes);
    co_await save_listing(file, std::move(text));
  }
  co_return objects;
}

asio::awaitable<Listing> CachedStore::list_level(std::string prefix) {
  const std::string prefix_url = source_->url(prefix);
  const fs::path file = detail::listing_file(state_->root, prefix_url, "level");
  if (!state_->online()) co_return saved_listing(file, prefix_url, state_->root);
  Listing listing = co_await source_->list_level(std::move(prefix));
  if (listable(listing.objects, listing.prefixes)) {
    std::string text = encode_listing(listing.objects, listing.prefixes);
    co_await save_listing(file, std::move(text));
  }
  co_return listing;
}

asio::awaitable<void> CachedStore::save_listing(fs::path file, std::string text) {
  if (!state_->writable()) co_return;
  const auto state = state_;
  auto saving = on_cache_threads(state->io, [state, file = std::move(file), text = std::move(text)] {
    try {
      detail::write_file_atomically(file, text);
    } catch (const std::exception& error) {
      state->failed_to_write(error);
    }
  });
  co_await std::move(saving);
}

asio::awaitable<std::shared_ptr<CacheEntry>> CachedStore::entry_of(const std::string& key) {
  const auto state = state_;
  {
    std::lock_guard lock(state->mutex);
    if (const auto found = state->entries.find(key); found != state->entries.end()) {
      co_return found->second;
    }
  }
  const ObjectStat version = co_await stat(key);
  EntryInfo info{source_->url(key), version.version, version.size, source_->object_identity(key)};
  auto opening = on_cache_threads(state->io, [state, key, info]() -> std::shared_ptr<CacheEntry> {
    std::shared_ptr<CacheEntry> opened;
    try {
      opened = state->open_entry(info);
    } catch (const std::exception& error) {
      if (!state->online()) throw;
      state->failed_to_read(error);
    }
    std::lock_guard lock(state->mutex);
    return state->entries.emplace(key, opened).first->second;
  });
  co_return co_await std::move(opening);
}

asio::awaitable<void> CachedStore::read_range(std::string key, std::uint64_t offset,
                                              std::span<std::byte> destination) {
  check_byte_range(source_->url(key), offset, destination.size());
  if (destination.empty()) co_return;
  const auto state = state_;
  const std::shared_ptr<CacheEntry> entry = co_await entry_of(key);
  if (!entry) {
    co_await source_->read_range(std::move(key), offset, destination);
    co_return;
  }
  const std::uint64_t end = offset + destination.size();
  // Online, an entry made while its version could not tell a same-second rewrite apart serves
  // nothing: it was made anew for this store, which fills it.
  const bool trusted = entry->info().version.settled() || !state->online();
  auto finding = on_cache_threads(state->io, [entry, offset, end, trusted] {
    // Bytes a stream of this process fetched and queued for its writers (which may still be
    // writing when the next stream starts, as a Python program's previous stream ends on a
    // thread of its own) are read from the cache once written, not fetched again.
    if (entry->has_queued(offset, end)) {
      ++reads_awaiting_writes;
      entry->wait_for_queued(offset, end);
      --reads_awaiting_writes;
    }
    return trusted ? entry->overlapping(offset, end) : std::vector<Segment>{};
  });
  std::vector<Segment> segments;
  bool unreadable = false;
  try {
    segments = co_await std::move(finding);
  } catch (const std::exception&) {
    unreadable = passed_by(key, std::current_exception());
  }

  // The ranges of [offset, end) the cache does not hold (or held wrongly), fetched below.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> missing;
  std::uint64_t at = offset;
  for (const Segment& segment : segments) {
    if (segment.offset > at) missing.emplace_back(at, segment.offset);
    const std::uint64_t from = std::max(segment.offset, offset);
    const std::uint64_t to = std::min(segment.end(), end);
    const std::span<std::byte> part = destination.subspan(from - offset, to - from);
    at = to;
    if (unreadable) {
      missing.emplace_back(from, to);
      continue;
    }
    auto reading = on_cache_threads(state->io, [state, entry, segment, from, part] {
      std::uint64_t direct = 0;
      const bool intact = entry->read(segment, from, part, &direct);
      state->direct_bytes += direct;
      return intact;
    });
    bool intact = false;
    try {
      intact = co_await std::move(reading);
    } catch (const std::exception&) {
      unreadable = passed_by(key, std::current_exception());
    }
    if (unreadable) {
      missing.emplace_back(from, to);
    } else if (intact) {
      state->cached_bytes += to - from;
    } else {
      log(LogLevel::warning, [&] {
        return entry->info().url + ": bytes " + std::to_string(segment.offset) + "-" +
               std::to_string(segment.end() - 1) + " in the cache " +
               entry->directory().string() + " do not match their hash; fetching them again";
      });
      missing.emplace_back(from, to);
    }
  }
  if (at < end) missing.emplace_back(at, end);
  if (!missing.empty() && !state->online()) {
    const std::uint64_t held = entry->filled_bytes();
    throw StorageError(entry->info().url,
                       "bytes " + std::to_string(missing.front().first) + "-" +
                           std::to_string(missing.front().second - 1) +
                           " are not in the cache (" + format_byte_size(held) + " of " +
                           format_byte_size(entry->info().size) +
                           " cached) and --cache-mode offline asks the source nothing");
  }
  for (const auto& [from, to] : missing) {
    const std::span<std::byte> part = destination.subspan(from - offset, to - from);
    co_await source_->read_range(key, from, part);
    if (unreadable || !entry->writable() || !state->filling()) continue;
    // The read is done once its bytes are copied for a later write, or, past the limit of those
    // copies, written.
    auto filling = on_cache_threads(state->io, [state, entry, from = from, part] {
      if (!state->fill_later(entry, from, part)) state->fill(entry, from, part);
    });
    co_await std::move(filling);
  }
}

bool CachedStore::passed_by(const std::string& key, std::exception_ptr error) {
  // Offline, the cache is the only source: its failure is the read's.
  if (!state_->online()) std::rethrow_exception(error);
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& failure) {
    state_->failed_to_read(failure);
  }
  std::lock_guard lock(state_->mutex);
  state_->entries.insert_or_assign(key, nullptr);
  return true;
}

std::size_t CachedStore::memory_alignment(const std::string& key) {
  {
    std::lock_guard lock(state_->mutex);
    const auto found = state_->entries.find(key);
    if (found != state_->entries.end()) {
      if (found->second) return found->second->reads_direct() ? kDirectAlignment : 0;
      return source_->memory_alignment(key);
    }
  }
  return 0;
}

std::uint64_t CachedStore::preferred_read_size() const { return source_->preferred_read_size(); }

bool CachedStore::can_write() const { return source_->can_write(); }

std::unique_ptr<ObjectWriter> CachedStore::create_writer(std::string key, WriteOptions options) {
  return source_->create_writer(std::move(key), std::move(options));
}

asio::awaitable<StaleUploads> CachedStore::abort_stale_uploads(
    std::string prefix, std::chrono::system_clock::duration older_than) {
  co_return co_await source_->abort_stale_uploads(std::move(prefix), older_than);
}

StoreStats CachedStore::stats() const {
  StoreStats stats = source_->stats();
  stats.cached_bytes = state_->cached_bytes.load();
  stats.direct_bytes += state_->direct_bytes.load();
  stats.bytes += stats.cached_bytes;
  stats.io_mode = stats.io_mode.empty() ? "cache" : stats.io_mode + " + cache";
  return stats;
}

}  // namespace tensorstream
