#include "streaming/run_concurrently.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>
#include <exception>
#include <vector>

#include "tensorstream/async/condition_variable.hpp"

namespace tensorstream::detail {

namespace asio = boost::asio;

asio::awaitable<void> run_concurrently(std::size_t count,
                                       std::function<asio::awaitable<void>(std::size_t)> task) {
  // Waiting for the tasks must not be cut short by our own cancellation: they refer to our
  // caller's state, so we forward the cancellation and keep waiting.
  co_await asio::this_coro::throw_if_cancelled(false);
  const auto executor = co_await asio::this_coro::executor;

  std::vector<asio::cancellation_signal> cancellations(count);
  std::exception_ptr first_error;
  std::size_t running = count;
  bool cancelled = false;
  async::ConditionVariable finished;

  const auto cancel_all = [&] {
    if (cancelled) return;
    cancelled = true;
    for (auto& cancellation : cancellations) cancellation.emit(asio::cancellation_type::terminal);
  };

  for (std::size_t i = 0; i < count; ++i) {
    asio::co_spawn(executor, task(i),
                   asio::bind_cancellation_slot(cancellations[i].slot(),
                                                [&](std::exception_ptr error) {
                                                  if (error && !first_error) {
                                                    first_error = error;
                                                    cancel_all();
                                                  }
                                                  if (--running == 0) finished.notify_all();
                                                }));
  }
  while (running != 0) {
    try {
      co_await finished.wait();
    } catch (const boost::system::system_error& error) {
      if (error.code() != asio::error::operation_aborted) throw;
      cancel_all();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
  if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
    throw boost::system::system_error(asio::error::operation_aborted);
  }
}

}  // namespace tensorstream::detail
