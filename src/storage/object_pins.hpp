#pragma once
// The version of each object a store has read, recorded at the object's first access.

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "tensorstream/storage/object_store.hpp"

namespace tensorstream {

/// Versions by key, for a store whose objects may change between its reads: the first version
/// seen of a key is kept for the store's lifetime, and later reads are checked against it.
/// Thread-safe.
template <class Version>
class ObjectPins {
 public:
  /// The version pinned for `key`, nullopt before its first access.
  std::optional<Version> find(const std::string& key) const {
    std::lock_guard lock(mutex_);
    const auto found = pins_.find(key);
    if (found == pins_.end()) return std::nullopt;
    return found->second;
  }

  /// Pins `seen` for `key` unless a version is pinned already; returns the pinned version, which
  /// differs from `seen` when two first reads raced across a change of the object.
  Version pin(const std::string& key, const Version& seen) {
    std::lock_guard lock(mutex_);
    return pins_.try_emplace(key, seen).first->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::string, Version> pins_;
};

/// ObjectStore::stat() of a store that pins versions in `pins`: from the pin where it knows the
/// object's size, else from `store.size()`, which pins the object. Every store with pins answers
/// stat() with this; a Version tells it what it knows through two functions found beside it,
/// `object_version(version, identity)` (the ObjectVersion of the object named by `identity`,
/// ObjectStore::object_identity) and `pinned_size(version)` (nullopt where the response that
/// named the version did not say the size).
template <class Version>
boost::asio::awaitable<ObjectStat> pinned_stat(ObjectStore& store, const ObjectPins<Version>& pins,
                                               std::string key) {
  std::optional<Version> pinned = pins.find(key);
  if (pinned) {
    if (const std::optional<std::uint64_t> size = pinned_size(*pinned)) {
      co_return ObjectStat{*size, object_version(*pinned, store.object_identity(key))};
    }
  }
  const std::uint64_t size = co_await store.size(key);
  pinned = pins.find(key);
  co_return ObjectStat{size, pinned ? object_version(*pinned, store.object_identity(key))
                                    : ObjectVersion()};
}

}  // namespace tensorstream
