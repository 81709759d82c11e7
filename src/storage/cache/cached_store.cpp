#include "tensorstream/storage/cached_store.hpp"

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <sched.h>

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

#include "byte_size.hpp"
#include "huge_page_memory.hpp"
#include "environment_setting.hpp"
#include "exception_message.hpp"
#include "storage/cache/cache_entry.hpp"
#include "storage/cache/cache_layout.hpp"
#include "storage/file/read_pieces.hpp"
#include "async/run_on_thread.hpp"
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

// Copies of fetched ranges waiting to be written to their entries: their buffers, kept for
// reuse (fresh pages cost more than the copy), bounded by a limit in all, and how many are out.
// Reads that complete together (as a stream's do) would otherwise each wait for the writes
// queued before theirs; past the limit, a read waits for its own write, which holds the stream
// to the disk's pace.
//
// The writers run at idle priority (SCHED_IDLE), on the processor time the stream leaves: at
// normal priority, on two cores, their writes delayed the reads of a stream paced like 10 GbE by
// a few percent of its speed. Once something waits for them (the store closing, the program
// exiting: hurry(); a read of bytes they are about to write: reads_awaiting_writes), they run
// at normal priority.
class WriteBehind {
 public:
  using Buffer = detail::HugePageMemory;

  explicit WriteBehind(std::size_t limit) : limit_(limit) {}

  // A buffer of at least `size` bytes for a copy; nullopt when that would pass the limit.
  std::optional<Buffer> take(std::size_t size) {
    std::lock_guard lock(mutex_);
    const auto fits = std::find_if(free_.begin(), free_.end(),
                                   [&](const Buffer& buffer) { return buffer.size() >= size; });
    if (fits != free_.end()) {
      Buffer buffer = std::move(*fits);
      free_.erase(fits);
      ++out_;
      return buffer;
    }
    // Whole powers of two, so that the ranges of one stream, which differ a little in size,
    // reuse each other's buffers.
    const std::size_t capacity = std::bit_ceil(std::max(size, std::size_t{1} << 20));
    // Smaller free buffers make room for a larger one.
    while (held_ + capacity > limit_ && !free_.empty()) {
      held_ -= free_.back().size();
      free_.pop_back();
    }
    if (held_ + capacity > limit_) return std::nullopt;
    try {
      Buffer buffer(capacity);
      held_ += capacity;
      ++out_;
      return buffer;
    } catch (const std::bad_alloc&) {
      return std::nullopt;  // the read writes its bytes itself
    }
  }

  // Returns the buffer of a copy that has been written (or failed to be).
  void give_back(Buffer buffer) {
    {
      std::lock_guard lock(mutex_);
      free_.push_back(std::move(buffer));
      --out_;
    }
    all_back_.notify_all();
  }

  // Whether the writers should run at normal priority.
  bool hurried() const { return hurried_.load(); }
  void hurry() { hurried_ = true; }

  // Waits up to `patience` for every copy taken to be written, the writers hurried.
  void wait_until_written(std::chrono::seconds patience) {
    hurry();
    std::unique_lock lock(mutex_);
    all_back_.wait_for(lock, patience, [&] { return out_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable all_back_;
  const std::size_t limit_;
  std::size_t held_ = 0;  // capacity of every buffer, free or taken
  std::size_t out_ = 0;   // buffers taken
  std::vector<Buffer> free_;
  std::atomic<bool> hurried_{false};
};

// Reads, in any store of this process, waiting for bytes queued for a writer.
std::atomic<int> reads_awaiting_writes{0};

// Sets the calling thread's scheduling policy (SCHED_IDLE: it runs only when no other thread
// wants the processor). Linux lets any thread lower its own, and raise it back to SCHED_OTHER
// (since 2.6.39); a refusal leaves the thread as it was, which is only slower.
void schedule_calling_thread(int policy) {
  const sched_param parameters{};
  ::sched_setscheduler(0, policy, &parameters);
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
  std::map<std::string, ObjectStat> offline_stats;

  std::atomic<std::uint64_t> cached_bytes{0};
  std::atomic<std::uint64_t> direct_bytes{0};  // of those, read with direct I/O

  std::shared_ptr<WriteBehind> write_behind;

  // The recording thread: entries with ranges written and not yet recorded.
  std::mutex sync_mutex;
  std::condition_variable sync_wake;
  std::set<std::shared_ptr<CacheEntry>> unrecorded;
  bool stopping = false;
  async::LibraryThread recorder;

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
          log(LogLevel::warning, std::string("cache: ") + error.what() +
                                     " (the ranges stay unrecorded and are fetched again)");
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
    try {
      if (!entry->fill(offset, bytes)) return false;
      written(entry);
      return true;
    } catch (const std::exception& error) {
      // The read has its bytes either way; a write that failed leaves them to a later load.
      log(LogLevel::warning, std::string("cache: ") + error.what());
      return false;
    }
  }

  // Copies `bytes` for a fill that a writer thread runs later (called on a cache thread); false
  // when the copies waiting already hold the limit.
  bool fill_later(const std::shared_ptr<CacheEntry>& entry, std::uint64_t offset,
                  std::span<const std::byte> bytes) {
    auto buffer = write_behind->take(bytes.size());
    if (!buffer) return false;
    std::memcpy(buffer->data(), bytes.data(), bytes.size());
    auto copy = std::make_shared<WriteBehind::Buffer>(std::move(*buffer));
    entry->queue(offset, bytes.size());
    asio::post(writes, [this, entry, offset, copy, size = bytes.size()] {
      const bool awaited = write_behind->hurried() || reads_awaiting_writes.load() > 0;
      schedule_calling_thread(awaited ? SCHED_OTHER : SCHED_IDLE);
      fill(entry, offset, std::span<const std::byte>(copy->data(), size));
      entry->unqueue(offset, size);
      write_behind->give_back(std::move(*copy));
    });
    return true;
  }
};

namespace {

// Runs `work` (blocking file work) on the cache's threads.
template <class Work>
auto on_cache_threads(asio::io_context& io, Work work) -> asio::awaitable<decltype(work())> {
  return async::run_on(io.get_executor(), std::move(work));
}

// The entries this process has open, shared by its stores: a stream that starts right after
// another of the same object finds what the other wrote and has not recorded yet.
struct OpenEntries {
  std::mutex mutex;
  std::map<fs::path, std::weak_ptr<CacheEntry>> entries;
  std::vector<std::weak_ptr<WriteBehind>> write_behinds;  // of the stores alive
};

// At exit, whatever the stores' writers have not written and their recorders have not recorded
// yet: a program may end as soon as its stream has, before the store that read it (and its
// threads) is destroyed.
void record_open_entries();

OpenEntries& open_entries() {
  static OpenEntries* const instance = [] {
    std::atexit(record_open_entries);
    return new OpenEntries;
  }();
  return *instance;
}

void record_open_entries() {
  std::vector<std::shared_ptr<WriteBehind>> write_behinds;
  {
    OpenEntries& open = open_entries();
    std::lock_guard lock(open.mutex);
    for (const auto& write_behind : open.write_behinds) {
      if (auto live = write_behind.lock()) write_behinds.push_back(std::move(live));
    }
  }
  for (const auto& write_behind : write_behinds) {
    write_behind->wait_until_written(std::chrono::seconds(30));
  }
  std::vector<std::shared_ptr<CacheEntry>> entries;
  {
    OpenEntries& open = open_entries();
    std::lock_guard lock(open.mutex);
    for (const auto& [directory, entry] : open.entries) {
      if (auto live = entry.lock()) entries.push_back(std::move(live));
    }
  }
  for (const auto& entry : entries) {
    try {
      entry->commit();
    } catch (const std::exception& error) {
      std::fprintf(stderr, "tensorstream: warning: cache: %s\n", error.what());
    }
  }
}

void register_write_behind(const std::shared_ptr<WriteBehind>& write_behind) {
  OpenEntries& open = open_entries();
  std::lock_guard lock(open.mutex);
  std::erase_if(open.write_behinds, [](const auto& other) { return other.expired(); });
  open.write_behinds.push_back(write_behind);
}

// The open entry at `directory`, if it serves a store that is `writable` or not.
std::shared_ptr<CacheEntry> shared_entry(const fs::path& directory, bool writable) {
  OpenEntries& open = open_entries();
  std::lock_guard lock(open.mutex);
  const auto found = open.entries.find(directory);
  if (found == open.entries.end()) return nullptr;
  auto entry = found->second.lock();
  if (!entry) open.entries.erase(found);
  return entry && entry->writable() >= writable ? entry : nullptr;
}

void share_entry(const fs::path& directory, const std::shared_ptr<CacheEntry>& entry) {
  OpenEntries& open = open_entries();
  std::lock_guard lock(open.mutex);
  auto& slot = open.entries[directory];
  if (!slot.lock() || entry->writable()) slot = entry;
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
  if (cache.directory.empty() || cache.mode == CacheMode::off) return std::nullopt;
  return cache;
}

CachedStore::CachedStore(std::unique_ptr<ObjectStore> source, ResolvedCache cache,
                         asio::any_io_executor)
    : source_(std::move(source)), state_(std::make_shared<State>()) {
  state_->cache = std::move(cache);
  state_->root = state_->cache.directory;
  state_->write_behind =
      std::make_shared<WriteBehind>(static_cast<std::size_t>(state_->cache.write_behind));
  register_write_behind(state_->write_behind);
  // A model's own directory given as the cache would get objects/ and listings/ among its files,
  // which the next prefetch or copy of the model would take for files of the model.
  if (detail::holds_other_files(state_->root)) {
    throw InvalidArgument(state_->root.string() +
                          ": not a cache directory (it holds files but no objects/); give a "
                          "new or empty directory for the cache");
  }
  if (state_->cache.mode != CacheMode::offline) {
    std::error_code error;
    fs::create_directories(state_->root / "objects", error);
    if (error) {
      throw StorageError(state_->root.string(), "cannot create the cache directory: " + error.message());
    }
  }
  for (unsigned i = 0; i < cache_threads; ++i) {
    state_->threads.emplace_back("ts-cache", [state = state_.get()] { state->io.run(); });
  }
  for (unsigned i = 0; i < writer_threads; ++i) {
    state_->writers.emplace_back("ts-cache-wr", [state = state_.get()] {
      schedule_calling_thread(SCHED_IDLE);
      state->writes.run();
    });
  }
  state_->recorder = async::LibraryThread("ts-cache-rec", [state = state_.get()] {
    state->record_loop();
  });
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

asio::awaitable<std::uint64_t> CachedStore::size(std::string key) {
  const ObjectStat found = co_await stat(std::move(key));
  co_return found.size;
}

asio::awaitable<ObjectStat> CachedStore::stat(std::string key) {
  if (state_->cache.mode != CacheMode::offline) co_return co_await source_->stat(std::move(key));
  const std::string url = source_->url(key);
  const auto state = state_;
  auto lookup = on_cache_threads(state->io, [state, url]() -> std::optional<ObjectStat> {
    std::optional<detail::EntryOnDisk> newest;
    for (auto& entry : detail::list_entries(state->root)) {
      if (entry.info.url != url) continue;
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

bool CachedStore::can_list() const {
  return state_->cache.mode == CacheMode::offline || source_->can_list();
}

asio::awaitable<std::vector<ObjectInfo>> CachedStore::list(std::string prefix, ListDepth depth) {
  const std::string prefix_url = source_->url(prefix);
  const fs::path file = detail::listing_file(state_->root, prefix_url, depth_name(depth));
  if (state_->cache.mode == CacheMode::offline) {
    co_return saved_listing(file, prefix_url, state_->root).objects;
  }
  std::vector<ObjectInfo> objects = co_await source_->list(std::move(prefix), depth);
  if (state_->cache.mode == CacheMode::readwrite && listable(objects, {})) {
    detail::write_file_atomically(file, encode_listing(objects, {}));
  }
  co_return objects;
}

asio::awaitable<Listing> CachedStore::list_level(std::string prefix) {
  const std::string prefix_url = source_->url(prefix);
  const fs::path file = detail::listing_file(state_->root, prefix_url, "level");
  if (state_->cache.mode == CacheMode::offline) {
    co_return saved_listing(file, prefix_url, state_->root);
  }
  Listing listing = co_await source_->list_level(std::move(prefix));
  if (state_->cache.mode == CacheMode::readwrite && listable(listing.objects, listing.prefixes)) {
    detail::write_file_atomically(file, encode_listing(listing.objects, listing.prefixes));
  }
  co_return listing;
}

asio::awaitable<void> CachedStore::read_range(std::string key, std::uint64_t offset,
                                              std::span<std::byte> destination) {
  const auto state = state_;
  std::shared_ptr<CacheEntry> entry;
  bool known = false;
  {
    std::lock_guard lock(state->mutex);
    if (const auto found = state->entries.find(key); found != state->entries.end()) {
      entry = found->second;
      known = true;
    }
  }
  if (!known) {
    const ObjectStat version = co_await stat(key);
    EntryInfo info{source_->url(key), version.version, version.size};
    auto opening = on_cache_threads(state->io, [state, key, info]() -> std::shared_ptr<CacheEntry> {
      std::lock_guard lock(state->mutex);
      if (const auto found = state->entries.find(key); found != state->entries.end()) {
        return found->second;
      }
      std::shared_ptr<CacheEntry> opened;
      if (detail::cacheable(info)) {
        const fs::path directory = detail::entry_directory(state->root, info);
        const CacheMode mode = state->cache.mode;
        bool writable = mode == CacheMode::readwrite;
        if (writable && state->cache.max_size) {
          const std::uint64_t held =
              fs::exists(directory / "info") ? detail::entry_disk_bytes(directory) : 0;
          writable = detail::make_room(state->root, info.size - std::min(info.size, held),
                                       *state->cache.max_size, directory);
          if (!writable) {
            log(LogLevel::info, [&] {
              return info.url + ": not cached: " + format_byte_size(info.size) +
                     " does not fit in --cache-size " + format_byte_size(*state->cache.max_size) +
                     " beside the entries in use";
            });
          }
        }
        opened = shared_entry(directory, writable);
        if (!opened) {
          if (writable) detail::create_entry(state->root, info);
          opened = CacheEntry::open(directory, info, writable);
          if (!opened && writable) {
            // Evicted between its creation and its opening: once more.
            detail::create_entry(state->root, info);
            opened = CacheEntry::open(directory, info, writable);
          }
          if (opened) share_entry(directory, opened);
        }
      } else {
        log(LogLevel::info, info.url + ": not cached: its source reports no version");
      }
      state->entries.emplace(key, opened);
      return opened;
    });
    entry = co_await std::move(opening);
  }
  if (!entry) {
    co_await source_->read_range(std::move(key), offset, destination);
    co_return;
  }
  const std::uint64_t end = offset + destination.size();
  auto finding = on_cache_threads(state->io, [entry, offset, end] {
    // Bytes a stream of this process fetched and queued for its writers (which may still be
    // writing when the next stream starts, as a Python program's previous stream ends on a
    // thread of its own) are read from the cache once written, not fetched again.
    if (entry->has_queued(offset, end)) {
      ++reads_awaiting_writes;
      entry->wait_for_queued(offset, end);
      --reads_awaiting_writes;
    }
    return entry->overlapping(offset, end);
  });
  const std::vector<Segment> segments = co_await std::move(finding);

  // The ranges of [offset, end) the cache does not hold (or held wrongly), fetched below.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> missing;
  std::uint64_t at = offset;
  for (const Segment& segment : segments) {
    if (segment.offset > at) missing.emplace_back(at, segment.offset);
    const std::uint64_t from = std::max(segment.offset, offset);
    const std::uint64_t to = std::min(segment.end(), end);
    const std::span<std::byte> part = destination.subspan(from - offset, to - from);
    auto reading = on_cache_threads(state->io, [state, entry, segment, from, part] {
      std::uint64_t direct = 0;
      const bool intact = entry->read(segment, from, part, &direct);
      state->direct_bytes += direct;
      return intact;
    });
    const bool intact = co_await std::move(reading);
    if (intact) {
      state->cached_bytes += to - from;
    } else {
      log(LogLevel::warning, [&] {
        return entry->info().url + ": bytes " + std::to_string(segment.offset) + "-" +
               std::to_string(segment.end() - 1) + " in the cache " +
               entry->directory().string() + " do not match their hash; fetching them again";
      });
      missing.emplace_back(from, to);
    }
    at = to;
  }
  if (at < end) missing.emplace_back(at, end);
  if (!missing.empty() && state->cache.mode == CacheMode::offline) {
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
    if (state->cache.mode != CacheMode::readwrite || !entry->writable()) continue;
    // The read is done once its bytes are copied for a later write, or, past the limit of those
    // copies, written.
    auto filling = on_cache_threads(state->io, [state, entry, from = from, part] {
      if (!state->fill_later(entry, from, part)) state->fill(entry, from, part);
    });
    co_await std::move(filling);
  }
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
