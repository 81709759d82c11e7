#pragma once
// A store of a scheme the library does not have, as a program would add one: objects held in
// memory, listed and read by range. The scheme tests register it as "mem://bucket/key" from the
// test files alone.

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "tensorstream/error.hpp"
#include "tensorstream/storage/object_store.hpp"

namespace tensorstream::testing {

/// Objects by key ("/tiny/model.safetensors"), shared by the stores that serve them.
using MemoryObjects = std::map<std::string, std::string>;

class MemoryStore final : public ObjectStore {
 public:
  /// `place` names where the bucket lives, as an az:// URL's account is named outside it: two
  /// stores of one bucket name and two places hold two objects under one URL.
  MemoryStore(std::string bucket, std::shared_ptr<const MemoryObjects> objects,
              std::string place = "")
      : bucket_(std::move(bucket)), objects_(std::move(objects)), place_(std::move(place)) {}

  std::string url(const std::string& key) const override { return "mem://" + bucket_ + key; }

  std::string object_identity(const std::string& key) const override {
    return place_.empty() ? url(key) : "mem://" + place_ + "/" + bucket_ + key;
  }

  boost::asio::awaitable<std::uint64_t> size(std::string key) override {
    ++requests_;
    co_return object(key).size();
  }

  boost::asio::awaitable<ObjectStat> stat(std::string key) override {
    ++requests_;
    ObjectVersion version = ObjectVersion::other(object_identity(key), "memory");
    co_return ObjectStat{object(key).size(), std::move(version)};
  }

  bool can_list() const override { return true; }

  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override {
    ++requests_;
    std::vector<ObjectInfo> found;
    for (const auto& [key, bytes] : *objects_) {
      if (!key.starts_with(prefix)) continue;
      if (depth == ListDepth::one_level && key.find('/', prefix.size()) != std::string::npos) {
        continue;
      }
      found.push_back({key, bytes.size()});
    }
    co_return found;
  }

  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    ++requests_;
    const std::string& bytes = object(key);
    if (offset > bytes.size() || destination.size() > bytes.size() - offset) {
      throw StorageError(url(key), "read past the end of the object");
    }
    std::memcpy(destination.data(), bytes.data() + offset, destination.size());
    bytes_ += destination.size();
    co_return;
  }

  StoreStats stats() const override {
    return {.requests = requests_.load(), .bytes = bytes_.load(), .io_mode = "memory"};
  }

 private:
  const std::string& object(const std::string& key) const {
    const auto found = objects_->find(key);
    if (found == objects_->end()) throw NotFoundError(url(key), "no such object in memory");
    return found->second;
  }

  std::string bucket_;
  std::shared_ptr<const MemoryObjects> objects_;
  std::string place_;
  std::atomic<std::uint64_t> requests_{0};
  std::atomic<std::uint64_t> bytes_{0};
};

}  // namespace tensorstream::testing
