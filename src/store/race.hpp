#pragma once
// Racing a coroutine against an event (a deadline, a hang-up) on one strand.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <utility>

namespace tensorstream::store {

/// Runs `work` and the deferred operation `event` (e.g. `timer.async_wait(asio::deferred)`)
/// until one of them completes, cancels the other and waits for it. Must be called on a strand
/// that also runs `work` and `event` (parallel groups are not thread-safe).
/// @returns true when `work` finished first (rethrowing what it threw), false when `event` did.
/// @throws boost::system::system_error (operation_aborted) when the caller was cancelled.
template <class Event>
boost::asio::awaitable<bool> finishes_first(boost::asio::awaitable<void> work, Event event) {
  namespace asio = boost::asio;
  const auto strand = co_await asio::this_coro::executor;
  auto race = asio::experimental::make_parallel_group(
      asio::co_spawn(strand, std::move(work), asio::deferred), std::move(event));
  auto first_done = race.async_wait(asio::experimental::wait_for_one(), asio::deferred);
  [[maybe_unused]] auto [order, failure, event_error] = co_await std::move(first_done);
  const auto state = co_await asio::this_coro::cancellation_state;
  if (state.cancelled() != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted);
  }
  if (order[0] == 1) co_return false;
  if (failure) std::rethrow_exception(failure);
  co_return true;
}

}  // namespace tensorstream::store
