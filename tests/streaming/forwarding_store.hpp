#pragma once
// The base of the streaming tests' instrumented stores: every call goes to a FileStore; a test
// store overrides the calls it watches or holds back.

#include "tensorstream/storage/file_store.hpp"

namespace tensorstream::testing {

class ForwardingStore : public ObjectStore {
 public:
  explicit ForwardingStore(boost::asio::any_io_executor executor) : inner_(std::move(executor)) {}

  std::string url(const std::string& key) const override { return inner_.url(key); }
  boost::asio::awaitable<std::uint64_t> size(std::string key) override {
    return inner_.size(std::move(key));
  }
  boost::asio::awaitable<ObjectStat> stat(std::string key) override {
    return inner_.stat(std::move(key));
  }
  bool can_list() const override { return true; }
  boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                       ListDepth depth) override {
    return inner_.list(std::move(prefix), depth);
  }
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    return inner_.read_range(std::move(key), offset, destination);
  }
  StoreStats stats() const override { return inner_.stats(); }

 protected:
  FileStore inner_;
};

}  // namespace tensorstream::testing
