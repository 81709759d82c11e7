// Caching of Google access tokens: reuse until the refresh margin, one refresh shared by
// concurrent callers (its token or its error), the old token kept while a refresh fails, and
// callers cancelled while they wait.

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "support/logged_messages.hpp"
#include "tensorstream/storage/gcs/cached_provider.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::gcs {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using Clock = std::chrono::system_clock;

const Clock::time_point start = Clock::time_point(std::chrono::seconds(1700000000));

// Hands out "token-N" for its Nth call, expiring as set, or fails when told to; while held,
// every call waits until release() (or until its caller is cancelled).
class ScriptedProvider : public TokenProvider {
 public:
  explicit ScriptedProvider(asio::io_context& io)
      : gate_(io, asio::steady_timer::time_point::max()) {}

  std::string name() const override { return "scripted"; }

  asio::awaitable<AccessToken> get() override {
    const int call = ++calls_;
    while (held_) {
      (void)co_await gate_.async_wait(asio::as_tuple(asio::use_awaitable));
      if (held_) throw boost::system::system_error(asio::error::operation_aborted);
    }
    if (fail_) throw CredentialsError("Google", "scripted", "endpoint down", true);
    co_return AccessToken{"token-" + std::to_string(call), expiration_};
  }

  int calls() const { return calls_; }
  void expire_at(std::optional<Clock::time_point> expiration) { expiration_ = expiration; }
  void fail(bool fail) { fail_ = fail; }
  void hold() { held_ = true; }
  void release() {
    held_ = false;
    gate_.cancel();
  }

 private:
  asio::steady_timer gate_;
  int calls_ = 0;
  bool held_ = false;
  bool fail_ = false;
  std::optional<Clock::time_point> expiration_ = start + 1h;
};

// The token value a call got, or the message of what it threw (for a system_error, the message
// of its code).
using Outcome = std::string;

class GcsCachedProvider : public ::testing::Test {
 protected:
  GcsCachedProvider()
      : inner_(std::make_shared<ScriptedProvider>(io_)),
        cached_(inner_, 5min, [this] { return now_; }) {}

  // Starts a call whose outcome lands in `outcomes_[index]`; `cancel` may cancel it.
  void call(std::size_t index, asio::cancellation_signal* cancel = nullptr) {
    outcomes_.resize(std::max(outcomes_.size(), index + 1));
    auto done = [this, index](std::exception_ptr error, AccessToken token) {
      if (!error) {
        outcomes_[index] = token.value;
        return;
      }
      try {
        std::rethrow_exception(error);
      } catch (const boost::system::system_error& e) {
        outcomes_[index] = e.code().message();
      } catch (const std::exception& e) {
        outcomes_[index] = e.what();
      }
    };
    if (cancel) {
      asio::co_spawn(io_, cached_.get(), asio::bind_cancellation_slot(cancel->slot(), done));
    } else {
      asio::co_spawn(io_, cached_.get(), done);
    }
  }

  // Runs the calls started so far until they are all suspended, then `body`, then everything to
  // completion.
  template <class Body>
  void finish_with(Body body) {
    io_.poll();
    io_.restart();
    asio::co_spawn(io_, body(), asio::detached);
    io_.run();
    io_.restart();
  }

  // One call, run to completion.
  Outcome get() {
    call(outcomes_.size());
    io_.run();
    io_.restart();
    return outcomes_.back();
  }

  // Lets other handlers run until the inner provider has been called `calls` times.
  asio::awaitable<void> until_calls(int calls) {
    while (inner_->calls() < calls) co_await asio::post(io_, asio::use_awaitable);
  }

  asio::io_context io_;
  Clock::time_point now_ = start;
  std::shared_ptr<ScriptedProvider> inner_;
  CachedProvider cached_;
  std::vector<Outcome> outcomes_;
};

TEST_F(GcsCachedProvider, TokenIsReusedUntilTheMarginBeforeItExpires) {
  EXPECT_EQ(get(), "token-1");
  now_ = start + 55min - 1s;
  EXPECT_EQ(get(), "token-1");
  EXPECT_EQ(inner_->calls(), 1);
  now_ = start + 55min;
  inner_->expire_at(start + 2h);
  EXPECT_EQ(get(), "token-2");
  EXPECT_EQ(get(), "token-2");
  EXPECT_EQ(inner_->calls(), 2);
}

TEST_F(GcsCachedProvider, ShortLivedTokenIsRefreshedHalfWayThroughItsLifetime) {
  inner_->expire_at(start + 200s);
  EXPECT_EQ(get(), "token-1");
  now_ = start + 99s;
  EXPECT_EQ(get(), "token-1");
  now_ = start + 100s;
  EXPECT_EQ(get(), "token-2");
}

TEST_F(GcsCachedProvider, TokenWithoutExpirationIsKeptForever) {
  inner_->expire_at(std::nullopt);
  EXPECT_EQ(get(), "token-1");
  now_ = start + 24h * 365;
  EXPECT_EQ(get(), "token-1");
  EXPECT_EQ(inner_->calls(), 1);
}

TEST_F(GcsCachedProvider, ConcurrentCallersShareOneRefresh) {
  inner_->hold();
  for (std::size_t i = 0; i < 5; ++i) call(i);
  finish_with([this]() -> asio::awaitable<void> {
    inner_->release();
    co_return;
  });
  EXPECT_EQ(outcomes_, std::vector<Outcome>(5, "token-1"));
  EXPECT_EQ(inner_->calls(), 1);
}

TEST_F(GcsCachedProvider, ConcurrentCallersShareTheRefreshError) {
  inner_->hold();
  inner_->fail(true);
  for (std::size_t i = 0; i < 3; ++i) call(i);
  finish_with([this]() -> asio::awaitable<void> {
    inner_->release();
    co_return;
  });
  EXPECT_EQ(outcomes_,
            std::vector<Outcome>(3, "Google credentials from scripted: endpoint down"));
  EXPECT_EQ(inner_->calls(), 1);
}

TEST_F(GcsCachedProvider, WhileARefreshRunsOthersGetTheOldTokenThatStillWorks) {
  EXPECT_EQ(get(), "token-1");
  now_ = start + 58min;
  inner_->hold();
  call(1);
  call(2);
  finish_with([this]() -> asio::awaitable<void> {
    EXPECT_EQ(outcomes_[2], "token-1") << "waited for the refresh";
    inner_->release();
    co_return;
  });
  EXPECT_EQ(outcomes_[1], "token-2");
  EXPECT_EQ(inner_->calls(), 2);
}

TEST_F(GcsCachedProvider, FailedRefreshKeepsATokenThatStillWorks) {
  tensorstream::testing::LoggedMessages warnings(LogLevel::warning);
  EXPECT_EQ(get(), "token-1");
  now_ = start + 58min;
  inner_->fail(true);
  EXPECT_EQ(get(), "token-1");
  EXPECT_EQ(warnings.messages(),
            std::vector<std::string>{"keeping a Google access token that expires soon, "
                                     "refreshing it failed: Google credentials from scripted: "
                                     "endpoint down"});
  now_ = start + 1h;
  EXPECT_EQ(get(), "Google credentials from scripted: endpoint down");
  EXPECT_EQ(inner_->calls(), 3);
}

TEST_F(GcsCachedProvider, CancelledWaiterLeavesTheRefreshToTheOthers) {
  inner_->hold();
  asio::cancellation_signal cancel;
  call(0);
  call(1, &cancel);
  call(2);
  finish_with([&]() -> asio::awaitable<void> {
    cancel.emit(asio::cancellation_type::terminal);
    inner_->release();
    co_return;
  });
  EXPECT_EQ(outcomes_, (std::vector<Outcome>{"token-1", "Operation canceled", "token-1"}));
  EXPECT_EQ(inner_->calls(), 1);
}

TEST_F(GcsCachedProvider, AbandonedRefreshIsTakenOverByAWaiter) {
  inner_->hold();
  asio::cancellation_signal cancel;
  call(0, &cancel);
  call(1);
  finish_with([&]() -> asio::awaitable<void> {
    cancel.emit(asio::cancellation_type::terminal);
    co_await until_calls(2);
    inner_->release();
  });
  EXPECT_EQ(outcomes_, (std::vector<Outcome>{"Operation canceled", "token-2"}));
}

// Hands out "token-N" for its Nth call after a few turns of its caller's executor, so that a
// refresh stays in flight while other threads ask.
class SlowProvider : public TokenProvider {
 public:
  std::string name() const override { return "slow"; }

  asio::awaitable<AccessToken> get() override {
    const int call = ++calls_;
    for (int turn = 0; turn < 5; ++turn) {
      co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
    }
    co_return AccessToken{"token-" + std::to_string(call), start + 1h};
  }

  int calls() const { return calls_; }

 private:
  std::atomic<int> calls_{0};
};

TEST(GcsCachedProviderThreads, CallersOnSeveralThreadsShareOneRefresh) {
  const auto inner = std::make_shared<SlowProvider>();
  CachedProvider cached(inner, 5min, [] { return start; });
  asio::io_context io;
  std::mutex mutex;
  std::vector<Outcome> outcomes;
  for (int i = 0; i < 200; ++i) {
    asio::co_spawn(asio::make_strand(io), cached.get(),
                   [&](std::exception_ptr error, AccessToken token) {
                     std::lock_guard lock(mutex);
                     outcomes.push_back(error ? "error" : token.value);
                   });
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([&] { io.run(); });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(outcomes, std::vector<Outcome>(200, "token-1"));
  EXPECT_EQ(inner->calls(), 1);
}

}  // namespace
}  // namespace tensorstream::gcs
