#include "storage/cache/open_entries.hpp"

#include <pthread.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace fs = std::filesystem;

namespace tensorstream::detail {
namespace {

struct OpenEntries {
  std::mutex mutex;
  std::map<fs::path, std::weak_ptr<CacheEntry>> entries;
  std::vector<std::weak_ptr<WriteBehind>> write_behinds;  // of the stores alive
};

void record_open_entries();
void forget_the_parents_entries();

// Never destroyed: at exit it is still in use.
OpenEntries& open_entries() {
  static OpenEntries* const instance = [] {
    std::atexit(record_open_entries);
    ::pthread_atfork(nullptr, nullptr, forget_the_parents_entries);
    return new OpenEntries;
  }();
  return *instance;
}

// In a child after fork(): its mutex may have been held by a thread that is not in the child.
void forget_the_parents_entries() {
  OpenEntries& open = open_entries();
  new (&open.mutex) std::mutex;
  open.entries.clear();
  open.write_behinds.clear();
}

void record_open_entries() {
  OpenEntries& open = open_entries();
  std::vector<std::shared_ptr<WriteBehind>> write_behinds;
  {
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

}  // namespace

void register_write_behind(const std::shared_ptr<WriteBehind>& write_behind) {
  OpenEntries& open = open_entries();
  std::lock_guard lock(open.mutex);
  std::erase_if(open.write_behinds, [](const auto& other) { return other.expired(); });
  open.write_behinds.push_back(write_behind);
}

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

}  // namespace tensorstream::detail
