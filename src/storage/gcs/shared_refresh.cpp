#include "storage/gcs/shared_refresh.hpp"

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <utility>

namespace tensorstream::gcs {
namespace {

namespace asio = boost::asio;

// Resumes a waiter on its own executor, never inside the call that ended the refresh, which may
// run on another thread. The cancellation slot is cleared there too, on the executor that emits
// cancellations, so that no emission can race with the clearing.
template <class Handler>
void complete(const asio::any_io_executor& executor, Handler handler, std::exception_ptr error,
              std::optional<AccessToken> token) {
  asio::post(executor,
             [handler = std::move(handler), error, token = std::move(token)]() mutable {
               asio::get_associated_cancellation_slot(handler).clear();
               std::move(handler)(error, std::move(token));
             });
}

}  // namespace

SharedRefresh::Claim::~Claim() {
  if (owner_ != nullptr) owner_->end(nullptr, std::nullopt);
}

void SharedRefresh::Claim::succeed(const AccessToken& token) {
  std::exchange(owner_, nullptr)->end(nullptr, token);
}

void SharedRefresh::Claim::fail(std::exception_ptr error) {
  std::exchange(owner_, nullptr)->end(std::move(error), std::nullopt);
}

std::optional<SharedRefresh::Claim> SharedRefresh::claim() {
  std::lock_guard lock(mutex_);
  if (running_) return std::nullopt;
  running_ = true;
  return Claim(*this);
}

boost::asio::awaitable<std::optional<AccessToken>> SharedRefresh::join() {
  co_return co_await asio::async_initiate<decltype(asio::use_awaitable),
                                          void(std::exception_ptr, std::optional<AccessToken>)>(
      [this](auto handler) {
        // The coroutine's executor, kept apart: the type-erased handler only offers one that
        // cannot be required never to run the completion inline.
        asio::any_io_executor executor = asio::get_associated_executor(handler);
        std::unique_lock lock(mutex_);
        if (!running_) {
          lock.unlock();
          complete(executor, std::move(handler), nullptr, std::nullopt);
          return;
        }
        const std::uint64_t id = next_id_++;
        // Erased first: the erased handler puts its own forwarder into the coroutine's slot, and
        // offers a slot of its own behind it.
        Handler erased(std::move(handler));
        auto slot = erased.get_cancellation_slot();
        if (slot.is_connected()) {
          slot.assign([this, id](asio::cancellation_type type) {
            if (type != asio::cancellation_type::none) cancel(id);
          });
        }
        waiters_.push_back(Waiter{id, std::move(executor), std::move(erased)});
      },
      asio::use_awaitable);
}

void SharedRefresh::end(std::exception_ptr error, const std::optional<AccessToken>& token) {
  std::list<Waiter> waiters;
  {
    std::lock_guard lock(mutex_);
    running_ = false;
    waiters.swap(waiters_);
  }
  for (auto& waiter : waiters) {
    complete(waiter.executor, std::move(waiter.handler), error, token);
  }
}

void SharedRefresh::cancel(std::uint64_t id) {
  std::unique_lock lock(mutex_);
  for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
    if (it->id != id) continue;
    Waiter waiter = std::move(*it);
    waiters_.erase(it);
    lock.unlock();
    complete(waiter.executor, std::move(waiter.handler),
             std::make_exception_ptr(boost::system::system_error(asio::error::operation_aborted)),
             std::nullopt);
    return;
  }
}

}  // namespace tensorstream::gcs
