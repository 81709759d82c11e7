#pragma once
// Running a blocking call on a thread of its own while a coroutine waits for it.

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <optional>
#include <thread>
#include <utility>

namespace tensorstream::async {

/// Runs `work` (a blocking call: a rendezvous, a collective) on a new thread, and resumes the
/// caller on its executor with its result or exception. Not cancellable: `work` must bound its
/// own wait, and the caller's executor must keep running until it returns.
template <class Work>
auto run_on_thread(Work work) -> boost::asio::awaitable<decltype(work())> {
  namespace asio = boost::asio;
  using T = decltype(work());
  // Every argument bound to a local first: GCC 12 may destroy the temporaries of a co_await
  // full-expression twice.
  auto initiation = [](auto handler, Work blocking) {
    std::thread([handler = std::move(handler), blocking = std::move(blocking)]() mutable {
      std::exception_ptr error;
      std::optional<T> value;
      try {
        value.emplace(blocking());
      } catch (...) {
        error = std::current_exception();
      }
      const auto executor = asio::get_associated_executor(handler);
      asio::post(executor, [handler = std::move(handler), error,
                            value = std::move(value)]() mutable {
        handler(error, std::move(value));
      });
    }).detach();
  };
  auto operation =
      asio::async_initiate<decltype(asio::use_awaitable), void(std::exception_ptr, std::optional<T>)>(
          std::move(initiation), asio::use_awaitable, std::move(work));
  std::optional<T> result = co_await std::move(operation);
  co_return std::move(*result);
}

}  // namespace tensorstream::async
