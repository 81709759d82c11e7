#pragma once
/// @file
/// The handler of a suspended operation, to be completed later from any thread.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/system/error_code.hpp>

#include <utility>

namespace tensorstream::detail {

/// Holds the completion handler of an operation that waits for an event on another thread.
///
/// While a Waiter holds a handler, the handler's executor counts outstanding work, so
/// `io_context::run()` does not return under a coroutine that is only waiting on the batcher.
/// complete() posts the handler to its executor and never runs it inline, so the caller's locks
/// and loops are never re-entered.
class Waiter {
 public:
  /// An empty waiter.
  Waiter() = default;

  /// Takes `handler`; `fallback` runs it if the handler has no associated executor.
  template <typename Handler>
  Waiter(Handler handler, const boost::asio::any_io_executor& fallback)
      : executor_(boost::asio::prefer(boost::asio::get_associated_executor(handler, fallback),
                                      boost::asio::execution::outstanding_work.tracked)),
        handler_(std::move(handler)) {}

  Waiter(Waiter&&) noexcept = default;

  /// Boost 1.81's any_completion_handler move assignment recurses until the stack overflows
  /// (it copies `other` as an lvalue into a new wrapper), so this swaps instead.
  Waiter& operator=(Waiter&& other) noexcept {
    if (this != &other) {
      boost::asio::any_completion_handler<void(boost::system::error_code)> incoming(
          std::move(other.handler_));
      handler_.swap(incoming);
      executor_ = std::move(other.executor_);
    }
    return *this;
  }

  /// Whether a handler is held.
  explicit operator bool() const noexcept { return static_cast<bool>(handler_); }

  /// Where the held handler's per-operation cancellation arrives. Type-erasing a handler
  /// re-parents its slot (any_completion_handler installs its own cancellation_state there), so
  /// cancellation handlers must be installed here, not on the original handler's slot.
  boost::asio::cancellation_slot cancellation_slot() const noexcept {
    return handler_.get_cancellation_slot();
  }

  /// Posts the handler with `error` to its executor and leaves the waiter empty. Thread-safe
  /// with respect to other waiters; does nothing when empty.
  void complete(boost::system::error_code error = {});

  /// Like complete(), but runs the handler at once when called from a thread running its
  /// executor. Only for callers that hold no lock and that may be re-entered, such as a timer's
  /// completion handler.
  void dispatch();

 private:
  boost::asio::any_io_executor executor_;
  boost::asio::any_completion_handler<void(boost::system::error_code)> handler_;
};

}  // namespace tensorstream::detail
