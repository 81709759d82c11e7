#include "tensorstream/batching/detail/request.hpp"

#include "tensorstream/batching/detail/pipeline.hpp"
#include "tensorstream/error.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

namespace asio = boost::asio;

namespace tensorstream::detail {

void RequestBase::fail(std::exception_ptr error) {
  error_ = std::move(error);
  finish();
}

void RequestBase::succeed() { finish(); }

void RequestBase::finish() {
  // Publishing under the lock pairs with the waiters' check of finished(), so no wake-up is lost.
  std::lock_guard lock(mutex_);
  state_.store(finished_state, std::memory_order_release);
  if (finished_condition_) {
    finished_condition_->notify_all();
  }
}

bool RequestBase::cancel() {
  if (!try_claim()) {
    return false;
  }
  if (auto pipeline = pipeline_.lock()) {
    pipeline->forget(*this);
  }
  fail(std::make_exception_ptr(Cancelled("batched request was cancelled before dispatch")));
  return true;
}

async::ConditionVariable& RequestBase::finished_condition_locked() {
  if (!finished_condition_) {
    finished_condition_.emplace();
  }
  return *finished_condition_;
}

asio::awaitable<void> RequestBase::wait() {
  std::unique_lock lock(mutex_);
  async::ConditionVariable& finished_condition = finished_condition_locked();
  std::exception_ptr abandoned;
  bool threw_if_cancelled = true;
  bool ignoring_cancellation = false;
  while (!finished()) {
    try {
      co_await finished_condition.wait(lock);
      continue;
    } catch (const boost::system::system_error& e) {
      if (e.code() != asio::error::operation_aborted) {
        throw;
      }
    }
    if (finished()) {
      break;
    }
    lock.unlock();
    const bool cancelled = cancel();  // finishes it, with Cancelled
    lock.lock();
    if (cancelled) {
      break;
    }
    const auto type = (co_await asio::this_coro::cancellation_state).cancelled();
    if ((type & asio::cancellation_type::terminal) != asio::cancellation_type::none) {
      abandoned = std::make_exception_ptr(
          boost::system::system_error(asio::error::operation_aborted, "ResultFuture::get"));
      break;
    }
    // A dispatched request outlives partial and total cancellation of its wait. The coroutine
    // stays marked cancelled, which would make the next co_await throw before parking.
    if (!ignoring_cancellation) {
      threw_if_cancelled = co_await asio::this_coro::throw_if_cancelled();
      co_await asio::this_coro::throw_if_cancelled(false);
      ignoring_cancellation = true;
    }
  }
  if (ignoring_cancellation) {
    co_await asio::this_coro::throw_if_cancelled(threw_if_cancelled);
  }
  if (abandoned) {
    std::rethrow_exception(abandoned);
  }
}

void RequestBase::async_wait(std::shared_ptr<RequestBase> request, asio::any_io_executor executor,
                             WaitHandler handler) {
  // The spawned coroutine is never cancelled itself: the handler's slot decides here, with the
  // cancellation type in hand, and a terminal abandonment reaches the coroutine as state.
  auto abandoned = std::make_shared<bool>(false);  // guarded by the request's mutex_
  auto slot = handler.get_cancellation_slot();
  if (slot.is_connected()) {
    slot.assign([weak = std::weak_ptr(request), abandoned](asio::cancellation_type type) {
      if (auto locked = weak.lock()) {
        locked->abandon_wait(type, *abandoned);
      }
    });
  }
  asio::co_spawn(std::move(executor), wait_unless_abandoned(std::move(request), abandoned),
                 [handler = std::move(handler)](std::exception_ptr error, bool finished) mutable {
                   handler.get_cancellation_slot().clear();
                   std::move(handler)(!error && finished
                                          ? boost::system::error_code()
                                          : boost::system::error_code(asio::error::operation_aborted));
                 });
}

void RequestBase::abandon_wait(asio::cancellation_type type, bool& abandoned) {
  if (cancel() || (type & asio::cancellation_type::terminal) == asio::cancellation_type::none) {
    return;
  }
  std::lock_guard lock(mutex_);
  abandoned = true;
  finished_condition_locked().notify_all();
}

asio::awaitable<bool> RequestBase::wait_unless_abandoned(std::shared_ptr<RequestBase> request,
                                                         std::shared_ptr<bool> abandoned) {
  std::unique_lock lock(request->mutex_);
  const auto done = [&request, &abandoned] { return request->finished() || *abandoned; };
  co_await request->finished_condition_locked().wait(lock, done);
  co_return request->finished();
}

}  // namespace tensorstream::detail
