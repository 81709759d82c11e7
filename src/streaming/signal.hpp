#pragma once

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tensorstream::detail {

/// Wakes every coroutine waiting on it, like a condition variable for coroutines of one strand.
///
/// A timer that never expires stands in for the wait queue: notify_all() cancels the pending
/// waits. Waiters re-check their condition after waking, since a wake may be stale. Every call must
/// come from the strand the waiters run on.
class Signal {
 public:
  explicit Signal(boost::asio::any_io_executor executor)
      : timer_(std::move(executor), boost::asio::steady_timer::time_point::max()) {}

  /// Suspends until the next notify_all() (or until the waiting coroutine is cancelled).
  boost::asio::awaitable<void> wait() {
    (void)co_await timer_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
  }

  /// Resumes every coroutine suspended in wait().
  void notify_all() { timer_.cancel(); }

 private:
  boost::asio::steady_timer timer_;
};

}  // namespace tensorstream::detail
