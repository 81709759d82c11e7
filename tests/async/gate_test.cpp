#include "tensorstream/async/gate.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <optional>
#include <thread>
#include <vector>

#include "tensorstream/error.hpp"

namespace tensorstream::async {
namespace {

namespace asio = boost::asio;

TEST(Gate, CloseWaitsUntilEveryHolderLeft) {
  asio::io_context io;
  Gate gate;
  std::optional<Gate::Holder> first(std::in_place, gate);
  std::optional<Gate::Holder> second(std::in_place, gate);
  bool closed = false;
  asio::co_spawn(io, gate.close(), [&](std::exception_ptr e) { closed = !e; });
  io.poll();
  EXPECT_TRUE(gate.is_closed());
  EXPECT_FALSE(closed);
  first.reset();
  io.poll();
  EXPECT_FALSE(closed);
  EXPECT_EQ(gate.count(), 1u);
  second.reset();
  io.poll();
  EXPECT_TRUE(closed);
}

TEST(Gate, ClosingAnEmptyGateReturnsAtOnce) {
  asio::io_context io;
  Gate gate;
  bool closed = false;
  asio::co_spawn(io, gate.close(), [&](std::exception_ptr e) { closed = !e; });
  io.poll();
  EXPECT_TRUE(closed);
}

TEST(Gate, NoWorkEntersAClosedGate) {
  asio::io_context io;
  Gate gate;
  asio::co_spawn(io, gate.close(), asio::detached);
  io.poll();
  EXPECT_FALSE(gate.try_enter());
  try {
    gate.enter();
    FAIL() << "enter() succeeded on a closed gate";
  } catch (const StateError& e) {
    EXPECT_STREQ(e.what(), "the gate is closed: no new work is accepted");
  }
  EXPECT_EQ(gate.count(), 0u);
}

TEST(Gate, EveryClosingCoroutineReturnsOnceEmpty) {
  asio::io_context io;
  Gate gate;
  Gate::Holder holder(gate);
  int closed = 0;
  for (int i = 0; i < 2; ++i) {
    asio::co_spawn(io, gate.close(), [&](std::exception_ptr e) { closed += e ? 0 : 1; });
  }
  io.poll();
  EXPECT_EQ(closed, 0);
  holder.release();
  holder.release();  // a second release leaves nothing twice
  io.poll();
  EXPECT_EQ(closed, 2);
}

TEST(Gate, MovedHolderLeavesOnce) {
  Gate gate;
  Gate::Holder a(gate);
  Gate::Holder b(std::move(a));
  EXPECT_EQ(gate.count(), 1u);
  Gate::Holder c(gate);
  c = std::move(b);
  EXPECT_EQ(gate.count(), 1u);
  c.release();
  EXPECT_EQ(gate.count(), 0u);
}

TEST(Gate, CancelledCloseThrowsAndTheGateStaysClosed) {
  asio::io_context io;
  Gate gate;
  Gate::Holder holder(gate);
  asio::cancellation_signal cancel;
  bool aborted = false;
  asio::co_spawn(io, gate.close(), asio::bind_cancellation_slot(cancel.slot(), [&](std::exception_ptr e) {
                   try {
                     if (e) std::rethrow_exception(e);
                   } catch (const boost::system::system_error& error) {
                     aborted = error.code() == asio::error::operation_aborted;
                   }
                 }));
  io.poll();
  cancel.emit(asio::cancellation_type::terminal);
  io.poll();
  EXPECT_TRUE(aborted);
  EXPECT_TRUE(gate.is_closed());
  EXPECT_FALSE(gate.try_enter());
}

TEST(Gate, HoldersLeavingOnOtherThreadsWakeClose) {
  asio::io_context io;
  Gate gate;
  constexpr int workers = 16;
  for (int i = 0; i < workers; ++i) gate.enter();
  bool closed = false;
  asio::co_spawn(io, gate.close(), [&](std::exception_ptr e) { closed = !e; });
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) threads.emplace_back([&] { gate.leave(); });
  io.run();
  for (auto& thread : threads) thread.join();
  EXPECT_TRUE(closed);
  EXPECT_EQ(gate.count(), 0u);
}

}  // namespace
}  // namespace tensorstream::async
