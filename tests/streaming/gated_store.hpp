#pragma once
// An ObjectStore for the streaming tests: reads through a FileStore, but holds back every read that
// touches a chosen byte range of a file until the test opens the gate.

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <memory>

#include "streaming/forwarding_store.hpp"

namespace tensorstream {

class GatedStore final : public testing::ForwardingStore {
 public:
  /// Holds reads starting in [begin, end) of `key`, counting in `cancelled_reads` those cancelled while
  /// held (the counter outlives the store). Streams using this store must run one I/O thread.
  GatedStore(boost::asio::any_io_executor executor, std::string key, std::uint64_t begin,
             std::uint64_t end, std::atomic<int>& cancelled_reads)
      : ForwardingStore(executor),
        executor_(executor),
        gate_(executor, boost::asio::steady_timer::time_point::max()),
        key_(std::move(key)),
        begin_(begin),
        end_(end),
        cancelled_reads_(cancelled_reads) {}

  /// Lets held and future reads through (thread-safe).
  void open() {
    boost::asio::post(executor_, [this] {
      open_ = true;
      gate_.cancel();
    });
  }

  /// Reads currently held.
  int held_reads() const { return held_reads_.load(); }

  boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                          std::span<std::byte> destination) override {
    const bool gated = key == key_ && offset >= begin_ && offset < end_;
    if (gated) {
      ++held_reads_;
      while (!open_) {
        auto [ec] = co_await gate_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
        if (ec && !open_) {
          auto state = co_await boost::asio::this_coro::cancellation_state;
          if (state.cancelled() != boost::asio::cancellation_type::none) {
            --held_reads_;
            ++cancelled_reads_;
            throw boost::system::system_error(boost::asio::error::operation_aborted);
          }
        }
      }
      --held_reads_;
    }
    co_await inner_.read_range(std::move(key), offset, destination);
  }

 private:
  boost::asio::any_io_executor executor_;
  boost::asio::steady_timer gate_;
  bool open_ = false;
  std::string key_;
  std::uint64_t begin_;
  std::uint64_t end_;
  std::atomic<int> held_reads_{0};
  std::atomic<int>& cancelled_reads_;
};

}  // namespace tensorstream
