#pragma once
// Running a blocking call on a thread of its own while a coroutine waits for it.

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <type_traits>

#include "tensorstream/async/library_thread.hpp"
#include <utility>

namespace tensorstream::async {

namespace detail {

/// Runs `blocking` here and hands its result, or its exception, to `handler` on the handler's
/// executor: the end of a blocking call that a coroutine awaits from another thread.
template <class Handler, class Work>
void complete_blocking(Handler handler, Work& blocking) {
  namespace asio = boost::asio;
  using T = decltype(blocking());
  using Value = std::conditional_t<std::is_void_v<T>, bool, T>;
  std::exception_ptr error;
  std::optional<Value> value;
  try {
    if constexpr (std::is_void_v<T>) {
      blocking();
      value.emplace(true);
    } else {
      value.emplace(blocking());
    }
  } catch (...) {
    error = std::current_exception();
  }
  const auto executor = asio::get_associated_executor(handler);
  asio::post(executor, [handler = std::move(handler), error, value = std::move(value)]() mutable {
    handler(error, std::move(value));
  });
}

/// What complete_blocking() hands over for a call returning T.
template <class T>
using BlockingValue = std::conditional_t<std::is_void_v<T>, bool, T>;

}  // namespace detail

/// Runs `work` (blocking file work) on `executor`, whose threads may block, and resumes the
/// caller on its own executor with its result or exception. Not cancellable; the caller's
/// executor must keep running until `work` returns.
template <class Executor, class Work>
auto run_on(Executor executor, Work work) -> boost::asio::awaitable<decltype(work())> {
  namespace asio = boost::asio;
  using T = decltype(work());
  auto initiation = [executor](auto handler, Work blocking) {
    asio::post(executor, [handler = std::move(handler), blocking = std::move(blocking)]() mutable {
      detail::complete_blocking(std::move(handler), blocking);
    });
  };
  auto operation = asio::async_initiate<decltype(asio::use_awaitable),
                                        void(std::exception_ptr, std::optional<detail::BlockingValue<T>>)>(
      std::move(initiation), asio::use_awaitable, std::move(work));
  [[maybe_unused]] auto result = co_await std::move(operation);
  if constexpr (!std::is_void_v<T>) co_return std::move(*result);
}

/// Runs `work` (a blocking call: a rendezvous, a collective, a write to disk) on a new thread,
/// and resumes the caller on its executor with its result or exception. Not cancellable: `work`
/// must bound its own wait, and the caller's executor must keep running until it returns. The
/// caller joins the thread once resumed, so that no copy of its executor outlives the wait: the
/// thread's last act, after handing over the result, is to destroy its own, which must not
/// happen after the caller has let the executor's context go.
template <class Work>
auto run_on_thread(Work work) -> boost::asio::awaitable<decltype(work())> {
  namespace asio = boost::asio;
  using T = decltype(work());
  using Value = detail::BlockingValue<T>;
  // Detached only where the caller is never resumed (its context destroyed first), which would
  // otherwise end the process.
  struct Thread {
    LibraryThread thread;
    ~Thread() {
      if (thread.joinable()) thread.detach();
    }
  };
  const auto thread = std::make_shared<Thread>();
  // The handler runs on the caller's executor, after this initiation (which runs there too) has
  // stored the thread.
  auto initiation = [thread](auto handler, Work blocking) {
    thread->thread = LibraryThread("ts-blocking", [handler = std::move(handler),
                                                   blocking = std::move(blocking)]() mutable {
      detail::complete_blocking(std::move(handler), blocking);
    });
  };
  auto operation =
      asio::async_initiate<decltype(asio::use_awaitable),
                           void(std::exception_ptr, std::optional<Value>)>(
          std::move(initiation), asio::use_awaitable, std::move(work));
  std::optional<Value> result;
  std::exception_ptr failure;
  try {
    result = co_await std::move(operation);
  } catch (...) {
    failure = std::current_exception();
  }
  thread->thread.join();
  if (failure) std::rethrow_exception(failure);
  if constexpr (!std::is_void_v<T>) co_return std::move(*result);
}

}  // namespace tensorstream::async
