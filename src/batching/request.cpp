#include "tensorstream/batching/detail/request.hpp"

#include "tensorstream/batching/detail/pipeline.hpp"
#include "tensorstream/error.hpp"

#include <boost/asio/error.hpp>

namespace tensorstream::detail {

void RequestBase::fail(std::exception_ptr error) {
  error_ = std::move(error);
  finish();
}

void RequestBase::succeed() { finish(); }

void RequestBase::finish() {
  Waiter waiter;
  {
    // Publishing under the lock pairs with the check in wait(), so no wake-up is lost.
    std::lock_guard lock(mutex_);
    state_.store(finished_state, std::memory_order_release);
    waiter = std::move(waiter_);
  }
  waiter.complete();
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

void RequestBase::wait(Waiter waiter) {
  {
    std::lock_guard lock(mutex_);
    if (!finished()) {
      if (waiter_) {
        throw StateError("ResultFuture is already being waited on");
      }
      waiter_ = std::move(waiter);
      return;
    }
  }
  waiter.complete();
}

void RequestBase::cancel_wait(boost::asio::cancellation_type type) {
  if (cancel()) {
    return;
  }
  if ((type & boost::asio::cancellation_type::terminal) == boost::asio::cancellation_type::none) {
    return;
  }
  Waiter waiter;
  {
    std::lock_guard lock(mutex_);
    waiter = std::move(waiter_);
  }
  waiter.complete(boost::asio::error::operation_aborted);
}

}  // namespace tensorstream::detail
