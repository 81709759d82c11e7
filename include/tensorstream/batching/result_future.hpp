#pragma once
/// @file
/// The eventual result of one record submitted to a batcher.

#include "tensorstream/batching/detail/request.hpp"
#include "tensorstream/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <utility>

namespace tensorstream {

template <typename Record, typename Result>
class DynamicBatcher;

/// The result of one submitted record: awaiting get() yields the process function's result for
/// it, or rethrows what went wrong (the process function's exception, Error for a result-count
/// mismatch, Cancelled, DeadlineExceeded).
///
/// Move-only, like std::future; the result can be taken once. All member functions may be called
/// from any thread, but get() and async_wait() by one waiter at a time.
template <typename Result>
class ResultFuture {
 public:
  /// An empty future; valid() is false.
  ResultFuture() = default;
  ResultFuture(ResultFuture&&) noexcept = default;
  ResultFuture& operator=(ResultFuture&&) noexcept = default;
  ResultFuture(const ResultFuture&) = delete;
  ResultFuture& operator=(const ResultFuture&) = delete;

  /// Whether it refers to a request whose result was not taken yet.
  bool valid() const noexcept { return state_ != nullptr; }

  /// Whether the outcome is set, so get() will not suspend. False when not valid().
  bool ready() const noexcept { return state_ && state_->finished(); }

  /// Waits for the outcome, then returns the result or rethrows the failure, leaving the future
  /// empty. Throws StateError when not valid(). Cancelling the awaiting coroutine (e.g. the
  /// losing side of `||`) cancels a request that is still queued; see async_wait().
  boost::asio::awaitable<Result> get() {
    if (!state_) {
      throw StateError("ResultFuture is empty: its result was already taken");
    }
    if (!state_->finished()) {
      co_await state_->wait();
    }
    auto state = std::move(state_);
    co_return state->take_result();
  }

  /// Completes with `void(boost::system::error_code)` once the outcome is set; get() then does
  /// not suspend.
  ///
  /// Per-operation cancellation (any type) of a wait on a still-queued request cancels the
  /// request, which then completes the wait normally with Cancelled as its outcome. Terminal
  /// cancellation of a wait on a dispatched request completes it with `operation_aborted` and
  /// leaves the request running. Handlers without an associated executor run on the batcher's.
  /// Throws StateError when not valid().
  template <typename CompletionToken>
  auto async_wait(CompletionToken&& token) {
    if (!state_) {
      throw StateError("ResultFuture is empty: its result was already taken");
    }
    return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
        [state = state_, fallback = executor_](auto handler) {
          boost::asio::any_io_executor executor =
              boost::asio::get_associated_executor(handler, fallback);
          detail::RequestBase::async_wait(state, std::move(executor),
                                          detail::RequestBase::WaitHandler(std::move(handler)));
        },
        token);
  }

  /// Cancels the request if it has not been dispatched: it leaves the queue, the process function
  /// never sees it, and the future fails with Cancelled. Returns whether it did.
  bool cancel() { return state_ && state_->cancel(); }

 private:
  template <typename Record, typename R>
  friend class DynamicBatcher;

  ResultFuture(std::shared_ptr<detail::ResultState<Result>> state,
               boost::asio::any_io_executor executor)
      : state_(std::move(state)), executor_(std::move(executor)) {}

  std::shared_ptr<detail::ResultState<Result>> state_;
  boost::asio::any_io_executor executor_;
};

}  // namespace tensorstream
