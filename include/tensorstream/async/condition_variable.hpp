#pragma once
/// @file
/// The one way tensorstream parks a coroutine until something happens.

#include <boost/asio/awaitable.hpp>
#include <exception>
#include <memory>
#include <mutex>

#include "tensorstream/export.hpp"

namespace tensorstream::async {

/// Parks coroutines until another coroutine or thread notifies them: a condition variable for
/// coroutines, after Seastar's `condition_variable`.
///
/// - Every member may be called from any thread. A parked coroutine is resumed on its own
///   executor, never inside the call that woke it, so notifying while holding a lock is safe.
/// - A wait is cancelled by the waiting coroutine's cancellation slot (any cancellation type):
///   it then throws `boost::system::system_error(operation_aborted)` and nothing else changes.
/// - broken() ends every wait, present and future, with an exception, for shutdown and errors.
/// - While a coroutine is parked, its executor counts outstanding work, so `io_context::run()`
///   does not return under it.
///
/// The condition itself is the caller's state. Coroutines that share one strand with every
/// notifier use `wait(predicate)`; callers on several threads guard their state with a mutex and
/// use `wait(lock, predicate)`, which parks the coroutine before it releases the lock, so a
/// notification sent after a state change made under that lock is never lost.
///
/// The variable may be destroyed with coroutines parked on it: they throw operation_aborted.
class TENSORSTREAM_API ConditionVariable {
 public:
  ConditionVariable();
  ~ConditionVariable();

  ConditionVariable(const ConditionVariable&) = delete;
  ConditionVariable& operator=(const ConditionVariable&) = delete;

  /// Suspends until the next notify_one() or notify_all() that picks this coroutine.
  /// @throws boost::system::system_error (operation_aborted) when cancelled, or the exception
  ///   given to broken().
  boost::asio::awaitable<void> wait();

  /// Like wait(), for state guarded by the mutex `lock` holds: parks, then releases `lock` while
  /// suspended. `lock` is held again when the call returns or throws.
  boost::asio::awaitable<void> wait(std::unique_lock<std::mutex>& lock);

  /// Waits until `predicate()` holds, checking it first and after every wake-up. For coroutines
  /// on the one strand that also runs every notifier.
  template <class Predicate>
  boost::asio::awaitable<void> wait(Predicate predicate) {
    while (!predicate()) co_await wait();
  }

  /// Waits until `predicate()` holds, evaluating it under `lock`, as std::condition_variable.
  template <class Predicate>
  boost::asio::awaitable<void> wait(std::unique_lock<std::mutex>& lock, Predicate predicate) {
    while (!predicate()) co_await wait(lock);
  }

  /// Resumes the coroutine parked longest, if any.
  void notify_one() noexcept;

  /// Resumes every parked coroutine.
  void notify_all() noexcept;

  /// Ends every wait, parked now or started later, with `error` (by default a StateError saying
  /// the variable is broken), until the variable is destroyed.
  void broken(std::exception_ptr error = nullptr) noexcept;

  /// Whether any coroutine is parked.
  bool has_waiters() const noexcept;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace tensorstream::async
