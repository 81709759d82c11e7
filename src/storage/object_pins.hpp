#pragma once
// The version of each object a store has read, recorded at the object's first access.

#include <map>
#include <mutex>
#include <optional>
#include <string>

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

}  // namespace tensorstream
