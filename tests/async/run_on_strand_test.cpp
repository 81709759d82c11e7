#include "async/run_on_strand.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

namespace tensorstream::async {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

// The caller runs on `io` (this thread); the work on a strand of a two-thread pool.
class RunOnStrand : public ::testing::Test {
 protected:
  asio::io_context io;
  asio::thread_pool pool{2};
  asio::strand<asio::thread_pool::executor_type> strand = asio::make_strand(pool.get_executor());

  ~RunOnStrand() override { pool.join(); }
};

TEST_F(RunOnStrand, RunsTheWorkOnTheStrandAndResumesTheCallerOnItsOwnExecutor) {
  const auto caller_thread = std::this_thread::get_id();
  bool work_on_strand = false;
  std::thread::id resumed_on;
  std::string result;
  auto work = [&]() -> asio::awaitable<std::string> {
    work_on_strand = strand.running_in_this_thread();
    co_return "done";
  };
  auto caller = [&]() -> asio::awaitable<void> {
    result = co_await run_on_strand(strand, work());
    resumed_on = std::this_thread::get_id();
  };
  asio::co_spawn(io, caller(), [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  io.run();
  EXPECT_TRUE(work_on_strand);
  EXPECT_EQ(result, "done");
  EXPECT_EQ(resumed_on, caller_thread);
}

TEST_F(RunOnStrand, TheWorksExceptionReachesTheCaller) {
  auto work = []() -> asio::awaitable<int> {
    throw std::runtime_error("s3://bucket/key: no such object");
    co_return 0;
  };
  std::string message;
  auto caller = [&]() -> asio::awaitable<void> {
    try {
      co_await run_on_strand(strand, work());
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
  };
  asio::co_spawn(io, caller(), [](std::exception_ptr e) { if (e) std::rethrow_exception(e); });
  io.run();
  EXPECT_EQ(message, "s3://bucket/key: no such object");
}

TEST_F(RunOnStrand, TheCallersCancellationReachesTheWorkOnItsStrand) {
  bool cancelled_on_strand = false;
  auto work = [&]() -> asio::awaitable<int> {
    asio::steady_timer forever(strand, 1h);
    try {
      co_await forever.async_wait(asio::use_awaitable);
    } catch (const boost::system::system_error& e) {
      cancelled_on_strand =
          e.code() == asio::error::operation_aborted && strand.running_in_this_thread();
      throw;
    }
    co_return 0;
  };
  asio::cancellation_signal cancel;
  std::exception_ptr outcome;
  bool finished = false;
  asio::co_spawn(io, run_on_strand(strand, work()),
                 asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, int) {
                   outcome = e;
                   finished = true;
                 }));
  // Emitted on the caller's thread, while the work waits on the pool's.
  asio::steady_timer soon(io, 20ms);
  soon.async_wait([&](boost::system::error_code) { cancel.emit(asio::cancellation_type::all); });
  io.run();
  ASSERT_TRUE(finished);
  EXPECT_TRUE(cancelled_on_strand);
  ASSERT_TRUE(outcome);
  try {
    std::rethrow_exception(outcome);
  } catch (const boost::system::system_error& e) {
    EXPECT_EQ(e.code(), asio::error::operation_aborted);
  }
}

// A cancellation emitted just as the work finishes must neither reach a finished operation nor
// touch freed memory (Asio 1.81's own relay does: ASan reports it under this test).
TEST_F(RunOnStrand, ACancellationRacingTheEndOfTheWorkIsDropped) {
  for (int round = 0; round < 200; ++round) {
    auto work = []() -> asio::awaitable<int> { co_return 7; };
    asio::cancellation_signal cancel;
    int result = 0;
    asio::co_spawn(io, run_on_strand(strand, work()),
                   asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e, int value) {
                     if (!e) result = value;
                   }));
    for (int i = 0; i < 3; ++i) {
      asio::post(io, [&] { cancel.emit(asio::cancellation_type::terminal); });
      io.poll_one();
    }
    io.run();
    io.restart();
    EXPECT_EQ(result, 7);  // the work never awaits, so nothing could cancel it
  }
}

}  // namespace
}  // namespace tensorstream::async
