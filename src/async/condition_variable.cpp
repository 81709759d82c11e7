#include "tensorstream/async/condition_variable.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cstdint>
#include <list>
#include <utility>

#include "tensorstream/error.hpp"

namespace tensorstream::async {
namespace {

namespace asio = boost::asio;

using Handler = asio::any_completion_handler<void(std::exception_ptr)>;

std::exception_ptr aborted() {
  return std::make_exception_ptr(boost::system::system_error(asio::error::operation_aborted));
}

}  // namespace

struct ConditionVariable::State {
  struct Waiter {
    std::uint64_t id;
    asio::any_io_executor executor;  ///< The parked coroutine's, tracking outstanding work.
    Handler handler;
  };

  std::mutex mutex;
  std::list<Waiter> waiters;
  std::uint64_t next_id = 0;
  std::exception_ptr broken;

  // Resumes a waiter on its own executor, never inside the caller, which may hold locks or run
  // on another thread. The cancellation slot is cleared there too: on the executor that emits
  // the coroutine's cancellations, so that no emission races with the clearing.
  static void complete(Waiter waiter, std::exception_ptr error) {
    asio::post(waiter.executor, [handler = std::move(waiter.handler), error]() mutable {
      asio::get_associated_cancellation_slot(handler).clear();
      std::move(handler)(error);
    });
  }

  void cancel(std::uint64_t id) {
    std::unique_lock lock(mutex);
    for (auto it = waiters.begin(); it != waiters.end(); ++it) {
      if (it->id != id) continue;
      Waiter waiter = std::move(*it);
      waiters.erase(it);
      lock.unlock();
      complete(std::move(waiter), aborted());
      return;
    }
  }

  // Parks the handler, then releases the caller's lock, both under the state's mutex: a notifier
  // cannot pick the handler (and resume the coroutine on another thread, which re-locks `lock`)
  // before the lock was released here.
  struct Park {
    std::shared_ptr<State> state;
    std::unique_lock<std::mutex>* lock;

    template <class CompletionHandler>
    void operator()(CompletionHandler handler) const {
      asio::any_io_executor executor = asio::prefer(asio::get_associated_executor(handler),
                                                    asio::execution::outstanding_work.tracked);
      std::unique_lock guard(state->mutex);
      if (state->broken) {
        const std::exception_ptr error = state->broken;
        guard.unlock();
        if (lock != nullptr) lock->unlock();
        complete({0, std::move(executor), Handler(std::move(handler))}, error);
        return;
      }
      const std::uint64_t id = state->next_id++;
      // Erased first: the erased handler puts its own forwarder into the coroutine's slot and
      // offers a slot of its own behind it, which is where our handler must go.
      Handler erased(std::move(handler));
      auto slot = erased.get_cancellation_slot();
      if (slot.is_connected()) {
        slot.assign([weak = std::weak_ptr(state), id](asio::cancellation_type type) {
          if (type == asio::cancellation_type::none) return;
          if (auto alive = weak.lock()) alive->cancel(id);
        });
      }
      state->waiters.push_back({id, std::move(executor), std::move(erased)});
      if (lock != nullptr) lock->unlock();
    }
  };

  static asio::awaitable<void> park(std::shared_ptr<State> state,
                                    std::unique_lock<std::mutex>* lock) {
    Park initiation{std::move(state), lock};
    auto token = asio::as_tuple(asio::use_awaitable);
    auto [error] = co_await asio::async_initiate<decltype(token), void(std::exception_ptr)>(
        std::move(initiation), token);
    if (lock != nullptr) lock->lock();
    if (error) std::rethrow_exception(error);
  }

  void end_all(std::exception_ptr error) {
    std::list<Waiter> ended;
    {
      std::lock_guard lock(mutex);
      ended.swap(waiters);
    }
    for (auto& waiter : ended) complete(std::move(waiter), error);
  }
};

ConditionVariable::ConditionVariable() : state_(std::make_shared<State>()) {}

ConditionVariable::~ConditionVariable() { state_->end_all(aborted()); }

asio::awaitable<void> ConditionVariable::wait() { return State::park(state_, nullptr); }

asio::awaitable<void> ConditionVariable::wait(std::unique_lock<std::mutex>& lock) {
  return State::park(state_, &lock);
}

void ConditionVariable::notify_one() noexcept {
  std::unique_lock lock(state_->mutex);
  if (state_->waiters.empty()) return;
  State::Waiter waiter = std::move(state_->waiters.front());
  state_->waiters.pop_front();
  lock.unlock();
  State::complete(std::move(waiter), nullptr);
}

void ConditionVariable::notify_all() noexcept { state_->end_all(nullptr); }

void ConditionVariable::broken(std::exception_ptr error) noexcept {
  if (!error) error = std::make_exception_ptr(StateError("the condition variable is broken"));
  {
    std::lock_guard lock(state_->mutex);
    state_->broken = error;
  }
  state_->end_all(error);
}

bool ConditionVariable::has_waiters() const noexcept {
  std::lock_guard lock(state_->mutex);
  return !state_->waiters.empty();
}

}  // namespace tensorstream::async
