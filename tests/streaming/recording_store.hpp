#pragma once
// A FileStore that records what discovery asks of it: the keys whose size it is asked for, every
// range read, and the most size and read_range calls in progress at once. Each call yields to the
// executor before its work, so that calls started together overlap.

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <string>
#include <vector>

#include "streaming/forwarding_store.hpp"

namespace tensorstream::testing {

class RecordingStore final : public ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;

  /// One range read asked for.
  struct Read {
    std::string key;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
  };

  const std::vector<std::string>& sized() const { return sized_; }
  const std::vector<Read>& reads() const { return reads_; }
  int peak() const { return peak_; }

  boost::asio::awaitable<std::uint64_t> size(std::string key) override {
    sized_.push_back(key);
    InProgress counted(*this);
    co_await yield();
    co_return co_await inner_.size(std::move(key));
  }
  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    reads_.push_back({key, offset, destination.size()});
    InProgress counted(*this);
    co_await yield();
    co_await inner_.read_range(std::move(key), offset, destination);
  }

 private:
  struct InProgress {
    explicit InProgress(RecordingStore& store) : store(store) {
      store.peak_ = std::max(store.peak_, ++store.now_);
    }
    ~InProgress() { --store.now_; }
    RecordingStore& store;
  };

  static boost::asio::awaitable<void> yield() {
    co_await boost::asio::post(co_await boost::asio::this_coro::executor,
                               boost::asio::use_awaitable);
  }

  std::vector<std::string> sized_;
  std::vector<Read> reads_;
  int now_ = 0;
  int peak_ = 0;
};

}  // namespace tensorstream::testing
