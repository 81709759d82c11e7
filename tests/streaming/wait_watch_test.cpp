// WaitWatch: the longest wait of whatever is watched now, reported while a request waits and
// once more when the waits are over, until the work it watches ends.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

#include "streaming/forwarding_store.hpp"
#include "streaming/wait_watch.hpp"

namespace tensorstream::detail {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// A store whose stats() say what the test sets.
class WaitingStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
  StoreStats stats() const override {
    StoreStats stats;
    stats.waiting_for = waiting_for;
    stats.waiting_seconds = waiting_seconds;
    return stats;
  }

  void wait_for(std::string what, double seconds) {
    waiting_for = std::move(what);
    waiting_seconds = seconds;
  }

  std::string waiting_for;
  double waiting_seconds = 0;
};

asio::awaitable<void> sleep_for(std::chrono::milliseconds duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

TEST(WaitWatch, TheLongestWaitOfWhatIsWatchedNow) {
  asio::io_context io;
  WaitingStore source(io.get_executor());
  WaitingStore destination(io.get_executor());
  WaitWatch watch(io.get_executor());
  EXPECT_EQ(watch.longest().what, "");

  source.wait_for("a response from source:80", 3);
  destination.wait_for("a connection to destination:443", 5);
  {
    const auto watching_source = watch.watch(source);
    EXPECT_EQ(watch.longest().what, "a response from source:80");
    const auto watching_destination = watch_if(&watch, destination);
    EXPECT_EQ(watch.longest().what, "a connection to destination:443");
    EXPECT_EQ(watch.longest().seconds, 5);
    destination.wait_for("", 0);
    EXPECT_EQ(watch.longest().what, "a response from source:80");
    EXPECT_EQ(watch.longest().seconds, 3);
  }
  // Neither is watched any more, and a null watch watches nothing.
  EXPECT_EQ(watch.longest().what, "");
  const auto nothing = watch_if(static_cast<WaitWatch*>(nullptr), source);
  EXPECT_EQ(watch.longest().what, "");
}

// Work that waits 2 s-worth for a while: reports come while it does, then one empty report, then
// none; the reports end with the work.
TEST(WaitWatch, ReportsWhileARequestWaitsThenOnceWhenItIsOverUntilTheWorkEnds) {
  asio::io_context io;
  WaitingStore store(io.get_executor());
  WaitWatch watch(io.get_executor());
  std::vector<std::string> reports;
  const auto work = [&]() -> asio::awaitable<void> {
    const auto watching = watch.watch(store);
    co_await sleep_for(200ms);
    store.wait_for("a response from host:80", 2);
    co_await sleep_for(300ms);
    store.wait_for("", 0);
    co_await sleep_for(300ms);
  };
  std::function<void(const LongestWait&)> report = [&](const LongestWait& wait) {
    reports.push_back(wait.what + (wait.what.empty() ? "" : " ") +
                      (wait.seconds > 0 ? std::to_string(static_cast<int>(wait.seconds)) : ""));
  };
  auto done =
      asio::co_spawn(io, with_wait_reports(watch, work(), std::move(report), 50ms), asio::use_future);
  io.run_for(10s);
  ASSERT_EQ(done.wait_for(0s), std::future_status::ready) << "the reports outlived the work";
  done.get();
  ASSERT_GE(reports.size(), 3u);
  EXPECT_EQ(reports.back(), "");
  reports.pop_back();
  for (const auto& line : reports) EXPECT_EQ(line, "a response from host:80 2");
}

TEST(WaitWatch, WorkThatFailsEndsTheReportsWithItsError) {
  asio::io_context io;
  WaitWatch watch(io.get_executor());
  const auto work = []() -> asio::awaitable<void> {
    co_await sleep_for(100ms);
    throw std::runtime_error("the source is gone");
  };
  std::function<void(const LongestWait&)> report = [](const LongestWait&) {};
  auto done =
      asio::co_spawn(io, with_wait_reports(watch, work(), std::move(report), 20ms), asio::use_future);
  io.run_for(10s);
  ASSERT_EQ(done.wait_for(0s), std::future_status::ready) << "the reports outlived the work";
  EXPECT_THROW(
      {
        try {
          done.get();
        } catch (const std::runtime_error& error) {
          EXPECT_STREQ(error.what(), "the source is gone");
          throw;
        }
      },
      std::runtime_error);
}

}  // namespace
}  // namespace tensorstream::detail
