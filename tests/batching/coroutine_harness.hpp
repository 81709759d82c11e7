#pragma once
// Helpers for driving batcher coroutines from GoogleTest: run a coroutine to completion with a
// time limit, let posted work settle without sleeping, and hold a process function at a gate.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensorstream/batching/dynamic_batcher.hpp"

namespace tensorstream::testing {

namespace asio = boost::asio;

// Runs the coroutine `body()` on `context` until it finishes and returns its value or rethrows
// its exception. Throws if it has not finished within `limit`, so a hang fails instead of
// blocking the suite.
template <typename Body>
auto run(asio::io_context& context, Body body,
         std::chrono::steady_clock::duration limit = std::chrono::seconds(30)) {
  using Value = typename std::invoke_result_t<Body&>::value_type;
  std::exception_ptr error;
  bool done = false;
  if constexpr (std::is_void_v<Value>) {
    asio::co_spawn(context, body(), [&](std::exception_ptr e) {
      error = e;
      done = true;
    });
    context.run_for(limit);
    if (!done) {
      throw std::runtime_error("coroutine did not finish within the time limit");
    }
    if (error) {
      std::rethrow_exception(error);
    }
  } else {
    std::optional<Value> value;
    asio::co_spawn(context, body(), [&](std::exception_ptr e, Value v) {
      error = e;
      if (!e) {
        value.emplace(std::move(v));
      }
      done = true;
    });
    context.run_for(limit);
    if (!done) {
      throw std::runtime_error("coroutine did not finish within the time limit");
    }
    if (error) {
      std::rethrow_exception(error);
    }
    return std::move(*value);
  }
}

// Yields to the executor `rounds` times, so that on a single-threaded io_context every chain of
// posted handlers (wake-ups, hand-offs, completions) runs to quiescence without sleeping.
inline asio::awaitable<void> settle(int rounds = 200) {
  const auto executor = co_await asio::this_coro::executor;
  for (int i = 0; i < rounds; ++i) {
    co_await asio::post(executor, asio::use_awaitable);
  }
}

// Suspends the calling coroutine for `duration`.
inline asio::awaitable<void> sleep_for(std::chrono::steady_clock::duration duration) {
  asio::steady_timer timer(co_await asio::this_coro::executor, duration);
  co_await timer.async_wait(asio::use_awaitable);
}

// Holds coroutines in wait() until open(), once. Single-threaded use only; unlike async::Gate it
// tracks no holders.
class Latch {
 public:
  explicit Latch(asio::any_io_executor executor)
      : timer_(std::move(executor), asio::steady_timer::time_point::max()) {}

  asio::awaitable<void> wait() {
    while (!open_) {
      co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
  }

  void open() {
    open_ = true;
    timer_.cancel();
  }

 private:
  asio::steady_timer timer_;
  bool open_ = false;
};

/// The batcher most tests use.
using IntBatcher = DynamicBatcher<int, int>;
/// The batches a process function saw, in order.
using Batches = std::vector<std::vector<int>>;

/// A process function that records every batch in `batches` and answers record * 10.
inline IntBatcher::ProcessFn times_ten(Batches& batches) {
  return [&batches](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
    batches.push_back(batch);
    std::vector<int> results;
    for (const int record : batch) {
      results.push_back(record * 10);
    }
    co_return results;
  };
}

}  // namespace tensorstream::testing
