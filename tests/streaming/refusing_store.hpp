#pragma once
// A file store that refuses reads of tensor data (past the first 4 KiB, where headers are), as a
// server answering 404 would: for tests of a member of a distributed stream that fails.

#include "streaming/forwarding_store.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::testing {

class RefusingStore : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    if (offset >= 4096) throw NotFoundError(inner_.url(key), "HTTP 404 Not Found (injected)");
    co_await inner_.read_range(std::move(key), offset, destination);
  }
};

}  // namespace tensorstream::testing
