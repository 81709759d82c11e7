#include "tensorstream/async/condition_variable.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tensorstream/error.hpp"

namespace tensorstream::async {
namespace {

namespace asio = boost::asio;
using namespace asio::experimental::awaitable_operators;

// How a spawned coroutine ended: "done", "aborted" or the message of what it threw.
struct Outcome {
  std::optional<std::string> text;
  void operator()(std::exception_ptr error) {
    if (!error) {
      text = "done";
      return;
    }
    try {
      std::rethrow_exception(error);
    } catch (const boost::system::system_error& e) {
      text = e.code() == asio::error::operation_aborted ? "aborted" : e.what();
    } catch (const std::exception& e) {
      text = e.what();
    }
  }
};

// Spawns `task` on `io`, recording how it ends into `outcome`.
void spawn(asio::io_context& io, asio::awaitable<void> task, Outcome& outcome) {
  asio::co_spawn(io, std::move(task), [&outcome](std::exception_ptr e) { outcome(e); });
}

void spawn(asio::io_context& io, asio::awaitable<void> task, Outcome& outcome,
           asio::cancellation_signal& cancel) {
  asio::co_spawn(io, std::move(task),
                 asio::bind_cancellation_slot(cancel.slot(), [&outcome](std::exception_ptr e) {
                   outcome(e);
                 }));
}

TEST(ConditionVariable, NotifyAllResumesEveryParkedCoroutine) {
  asio::io_context io;
  ConditionVariable cv;
  std::vector<Outcome> outcomes(3);
  for (auto& outcome : outcomes) spawn(io, cv.wait(), outcome);
  io.poll();
  EXPECT_TRUE(cv.has_waiters());
  for (auto& outcome : outcomes) EXPECT_FALSE(outcome.text);
  cv.notify_all();
  io.poll();
  for (auto& outcome : outcomes) EXPECT_EQ(outcome.text, "done");
  EXPECT_FALSE(cv.has_waiters());
}

TEST(ConditionVariable, NotifyOneResumesTheLongestParkedFirst) {
  asio::io_context io;
  ConditionVariable cv;
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(
        io,
        [&, i]() -> asio::awaitable<void> {
          co_await cv.wait();
          order.push_back(i);
        },
        asio::detached);
    io.poll();
  }
  cv.notify_one();
  io.poll();
  EXPECT_EQ(order, (std::vector<int>{0}));
  cv.notify_one();
  cv.notify_one();
  io.poll();
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  cv.notify_one();  // nobody parked: nothing happens, nothing is remembered
  EXPECT_FALSE(cv.has_waiters());
}

TEST(ConditionVariable, NotifyRunsNoWaiterInline) {
  asio::io_context io;
  ConditionVariable cv;
  Outcome outcome;
  spawn(io, cv.wait(), outcome);
  io.poll();
  cv.notify_all();
  EXPECT_FALSE(outcome.text) << "the waiter ran inside notify_all()";
  io.poll();
  EXPECT_EQ(outcome.text, "done");
}

TEST(ConditionVariable, PredicateWaitReturnsAtOnceWhenItHolds) {
  asio::io_context io;
  ConditionVariable cv;
  bool ready = true;
  Outcome outcome;
  spawn(io, cv.wait([&] { return ready; }), outcome);
  io.poll();
  EXPECT_EQ(outcome.text, "done");
  EXPECT_FALSE(cv.has_waiters());
}

TEST(ConditionVariable, PredicateWaitSleepsThroughWakeUpsWhileItIsFalse) {
  asio::io_context io;
  ConditionVariable cv;
  int value = 0;
  Outcome outcome;
  spawn(io, cv.wait([&] { return value == 2; }), outcome);
  io.poll();
  value = 1;
  cv.notify_all();
  io.poll();
  EXPECT_FALSE(outcome.text);
  EXPECT_TRUE(cv.has_waiters());
  value = 2;
  cv.notify_all();
  io.poll();
  EXPECT_EQ(outcome.text, "done");
}

TEST(ConditionVariable, CancellationAbortsOnlyTheCancelledWait) {
  asio::io_context io;
  ConditionVariable cv;
  asio::cancellation_signal cancel;
  Outcome cancelled;
  Outcome other;
  spawn(io, cv.wait(), cancelled, cancel);
  spawn(io, cv.wait(), other);
  io.poll();
  cancel.emit(asio::cancellation_type::terminal);
  io.poll();
  EXPECT_EQ(cancelled.text, "aborted");
  EXPECT_FALSE(other.text);
  EXPECT_TRUE(cv.has_waiters());
  cv.notify_one();
  io.poll();
  EXPECT_EQ(other.text, "done");
}

TEST(ConditionVariable, CancellationAfterTheWakeUpChangesNothing) {
  asio::io_context io;
  ConditionVariable cv;
  asio::cancellation_signal cancel;
  Outcome outcome;
  spawn(io, cv.wait(), outcome, cancel);
  io.poll();
  cv.notify_all();
  cancel.emit(asio::cancellation_type::terminal);  // the wake-up is already on its way
  io.poll();
  EXPECT_EQ(outcome.text, "done");
}

TEST(ConditionVariable, LosingARaceAgainstATimerLeavesNothingParked) {
  asio::io_context io;
  ConditionVariable cv;
  std::optional<std::size_t> winner;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer timer(io, std::chrono::milliseconds(1));
        auto result = co_await (cv.wait() || timer.async_wait(asio::use_awaitable));
        winner = result.index();
      },
      asio::detached);
  io.run();
  EXPECT_EQ(winner, 1u);
  EXPECT_FALSE(cv.has_waiters());
}

TEST(ConditionVariable, BrokenEndsPresentAndLaterWaits) {
  asio::io_context io;
  ConditionVariable cv;
  Outcome parked;
  spawn(io, cv.wait(), parked);
  io.poll();
  cv.broken(std::make_exception_ptr(std::runtime_error("stream failed")));
  io.poll();
  EXPECT_EQ(parked.text, "stream failed");
  Outcome later;
  io.restart();  // it ran out of work
  spawn(io, cv.wait(), later);
  io.poll();
  EXPECT_EQ(later.text, "stream failed");
  EXPECT_FALSE(cv.has_waiters());
}

TEST(ConditionVariable, BrokenWithoutAnErrorSaysSo) {
  asio::io_context io;
  ConditionVariable cv;
  cv.broken();
  Outcome outcome;
  spawn(io, cv.wait(), outcome);
  io.poll();
  EXPECT_EQ(outcome.text, "the condition variable is broken");
}

TEST(ConditionVariable, DestructionAbortsParkedCoroutines) {
  asio::io_context io;
  Outcome outcome;
  asio::cancellation_signal cancel;
  {
    ConditionVariable cv;
    spawn(io, cv.wait(), outcome, cancel);
    io.poll();
  }
  io.poll();
  EXPECT_EQ(outcome.text, "aborted");
  cancel.emit(asio::cancellation_type::terminal);  // the slot no longer reaches the variable
  io.poll();
}

TEST(ConditionVariable, ParkedCoroutineKeepsItsIoContextRunning) {
  asio::io_context io;
  ConditionVariable cv;
  Outcome outcome;
  spawn(io, cv.wait(), outcome);
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(io.stopped()) << "run() returned under a parked coroutine";
  cv.notify_all();
  io.run();
  EXPECT_EQ(outcome.text, "done");
}

TEST(ConditionVariable, LockIsHeldAgainAfterWaitReturnsOrThrows) {
  asio::io_context io;
  ConditionVariable cv;
  std::mutex mutex;
  asio::cancellation_signal cancel;
  std::vector<bool> owned;
  auto task = [&]() -> asio::awaitable<void> {
    std::unique_lock lock(mutex);
    co_await cv.wait(lock);
    owned.push_back(lock.owns_lock());
    try {
      co_await cv.wait(lock);
    } catch (const boost::system::system_error&) {
      owned.push_back(lock.owns_lock());
    }
  };
  Outcome outcome;
  spawn(io, task(), outcome, cancel);
  io.poll();
  EXPECT_TRUE(mutex.try_lock()) << "the lock was not released while parked";
  mutex.unlock();
  cv.notify_all();
  io.poll();
  cancel.emit(asio::cancellation_type::terminal);
  io.poll();
  EXPECT_EQ(outcome.text, "done");
  EXPECT_EQ(owned, (std::vector<bool>{true, true}));
}

// Waiters on several threads and a notifier on another: a wake-up sent after a change made under
// the mutex reaches a waiter that checked the old state, however the threads interleave. A lost
// wake-up leaves a waiter parked for ever, which the deadline turns into a failure.
TEST(ConditionVariable, NoWakeUpIsLostBetweenThreads) {
  constexpr int waiters = 8;
  constexpr int steps = 2000;
  asio::io_context io;
  ConditionVariable cv;
  std::mutex mutex;
  int value = 0;
  std::atomic<int> finished{0};
  for (int w = 0; w < waiters; ++w) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          for (int target = 1; target <= steps; ++target) {
            std::unique_lock lock(mutex);
            co_await cv.wait(lock, [&] { return value >= target; });
          }
          ++finished;
        },
        asio::detached);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back([&] { io.run(); });
  std::thread notifier([&] {
    for (int i = 0; i < steps; ++i) {
      {
        std::lock_guard lock(mutex);
        ++value;
      }
      cv.notify_all();
      std::this_thread::yield();
    }
  });
  notifier.join();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (finished < waiters && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(finished.load(), waiters) << "a wake-up was lost";
  cv.broken();  // ends any wait left behind, so the threads can finish
  for (auto& thread : threads) thread.join();
}

}  // namespace
}  // namespace tensorstream::async
