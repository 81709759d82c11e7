#pragma once
// The one credential cache of every cloud (AWS credentials, Google access tokens): a stream's
// many concurrent requests all ask for credentials, and must not each ask the credentials
// endpoint for new ones.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "base/exception_message.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {

/// Keeps what `load` returned, a `T` with a member
/// `std::optional<std::chrono::system_clock::time_point> expiration` (nullopt: never expires).
///
/// - A value is refreshed `margin` before it expires, or half its lifetime (as seen when it was
///   stored) before, when that is shorter, so that short-lived credentials are not refreshed on
///   every call.
/// - At most one refresh runs at a time. While it runs, callers get the cached value if it has
///   not expired; otherwise they wait for the refresh and share its outcome, its error included.
/// - A refresh that fails while the cached value has not expired logs `kept_warning` followed by
///   the error and returns the cached value; the next call tries again. Failures are not cached.
/// - A refresh whose caller is cancelled (operation_aborted) or destroyed ends without an
///   outcome: one of the waiting callers starts another.
///
/// Thread-safe: callers may run on any executors and threads. A waiting caller is cancelled by
/// its cancellation slot. The cache may be destroyed while calls still run.
template <class T>
class CredentialCache {
 public:
  /// The clock deciding when values are stale.
  using Clock = std::function<std::chrono::system_clock::time_point()>;
  /// Gets a fresh value; throws when there is none.
  using Load = std::function<boost::asio::awaitable<T>()>;

  CredentialCache(Load load, std::chrono::seconds margin, Clock clock, std::string kept_warning)
      : state_(std::make_shared<State>(std::move(load), margin, std::move(clock),
                                       std::move(kept_warning))) {}

  /// The cached value, or the outcome of a refresh.
  boost::asio::awaitable<T> get() { return look(state_); }

 private:
  using TimePoint = std::chrono::system_clock::time_point;

  // How a refresh ended; neither value nor error when it was abandoned.
  struct Outcome {
    std::optional<T> value;
    std::exception_ptr error;
  };

  struct State {
    State(Load load, std::chrono::seconds margin, Clock clock, std::string kept_warning)
        : load(std::move(load)),
          margin(margin),
          clock(std::move(clock)),
          kept_warning(std::move(kept_warning)) {}

    const Load load;
    const std::chrono::seconds margin;
    const Clock clock;
    const std::string kept_warning;

    std::mutex mutex;
    std::optional<T> cached;
    TimePoint refresh_at;
    bool refreshing = false;
    std::uint64_t refreshes_ended = 0;
    Outcome last_outcome;
    async::ConditionVariable refresh_ended;

    // Ends the refresh in flight; `store` also caches the value.
    void end(Outcome outcome, bool store) {
      {
        std::lock_guard lock(mutex);
        if (store) {
          cached = outcome.value;
          refresh_at = refresh_time(*outcome.value, clock());
        }
        last_outcome = std::move(outcome);
        refreshing = false;
        ++refreshes_ended;
      }
      refresh_ended.notify_all();
    }

    TimePoint refresh_time(const T& value, TimePoint now) const {
      if (!value.expiration) return TimePoint::max();
      const auto lifetime = std::max(*value.expiration - now, TimePoint::duration{});
      return *value.expiration - std::min<TimePoint::duration>(margin, lifetime / 2);
    }
  };

  // Abandons the refresh unless an outcome was reported: when the refreshing coroutine is
  // cancelled, or destroyed without being resumed.
  class PendingRefresh {
   public:
    explicit PendingRefresh(State& state) : state_(&state) {}
    PendingRefresh(const PendingRefresh&) = delete;
    PendingRefresh& operator=(const PendingRefresh&) = delete;
    ~PendingRefresh() {
      if (state_ != nullptr) state_->end(Outcome{}, false);
    }
    void end(Outcome outcome, bool store) {
      std::exchange(state_, nullptr)->end(std::move(outcome), store);
    }

   private:
    State* state_;
  };

  static bool unexpired(const std::optional<T>& value, TimePoint now) {
    return value && (!value->expiration || now < *value->expiration);
  }

  // Static, with the state by value: the frame keeps the state alive if the cache goes first.
  static boost::asio::awaitable<T> look(std::shared_ptr<State> state) {
    std::unique_lock lock(state->mutex);
    for (;;) {
      const TimePoint now = state->clock();
      if (state->cached && now < state->refresh_at) co_return *state->cached;
      if (!state->refreshing) break;
      if (unexpired(state->cached, now)) co_return *state->cached;
      const std::uint64_t seen = state->refreshes_ended;
      while (state->refreshes_ended == seen) co_await state->refresh_ended.wait(lock);
      if (state->last_outcome.error) std::rethrow_exception(state->last_outcome.error);
      if (state->last_outcome.value) co_return *state->last_outcome.value;
      // Abandoned: look again, and take the refresh over unless another waiter did.
    }
    state->refreshing = true;
    std::optional<T> old = state->cached;
    lock.unlock();
    auto refreshing = refresh(std::move(state), std::move(old));
    co_return co_await std::move(refreshing);
  }

  static boost::asio::awaitable<T> refresh(std::shared_ptr<State> state, std::optional<T> old) {
    PendingRefresh pending(*state);
    std::exception_ptr failure;
    try {
      T fresh = co_await state->load();
      pending.end(Outcome{fresh, nullptr}, true);
      co_return fresh;
    } catch (const boost::system::system_error& error) {
      // This caller was cancelled: the refresh is abandoned, not failed.
      if (error.code() == boost::asio::error::operation_aborted) throw;
      failure = std::current_exception();
    } catch (...) {
      failure = std::current_exception();
    }
    if (unexpired(old, state->clock())) {
      log(LogLevel::warning, state->kept_warning + detail::exception_message(failure));
      pending.end(Outcome{old, nullptr}, false);
      co_return *old;
    }
    pending.end(Outcome{std::nullopt, failure}, false);
    std::rethrow_exception(failure);
  }

  std::shared_ptr<State> state_;
};

}  // namespace tensorstream
