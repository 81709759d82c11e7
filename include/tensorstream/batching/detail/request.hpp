#pragma once
/// @file
/// The shared state of one submitted record: its cost, its deadline, and the future's outcome.

#include "tensorstream/async/condition_variable.hpp"

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "tensorstream/export.hpp"

namespace tensorstream::detail {

class Pipeline;

/// The part of a request the pipeline sees, whatever the record and result types.
///
/// A request is queued until someone claims it: the processing loop (to dispatch it), cancel()
/// or the deadline sweep. Only the claimant resolves it, exactly once; whoever waits for it is
/// woken at that moment. Every member function is thread-safe.
class TENSORSTREAM_API RequestBase {
 public:
  using Clock = std::chrono::steady_clock;

  /// @param deadline `Clock::time_point::max()` when the request has none.
  RequestBase(std::size_t cost, Clock::time_point submitted_at, Clock::time_point deadline,
              std::weak_ptr<Pipeline> pipeline) noexcept
      : cost_(cost), submitted_at_(submitted_at), deadline_(deadline),
        pipeline_(std::move(pipeline)) {}
  RequestBase(const RequestBase&) = delete;
  RequestBase& operator=(const RequestBase&) = delete;
  virtual ~RequestBase() = default;

  /// Estimated cost, as counted against the batch budget.
  std::size_t cost() const noexcept { return cost_; }
  /// When submit() was called.
  Clock::time_point submitted_at() const noexcept { return submitted_at_; }
  /// Latest dispatch time; `Clock::time_point::max()` when none.
  Clock::time_point deadline() const noexcept { return deadline_; }
  /// Whether a deadline was given.
  bool has_deadline() const noexcept { return deadline_ != Clock::time_point::max(); }

  /// Whether nobody has claimed it yet.
  bool queued() const noexcept { return state_.load(std::memory_order_acquire) == queued_state; }
  /// Whether its outcome is set.
  bool finished() const noexcept {
    return state_.load(std::memory_order_acquire) == finished_state;
  }

  /// Takes the exclusive right to resolve the request; false if it was already claimed.
  bool try_claim() noexcept {
    auto expected = queued_state;
    return state_.compare_exchange_strong(expected, claimed_state, std::memory_order_acq_rel);
  }

  /// Resolves a claimed request with `error`.
  void fail(std::exception_ptr error);
  /// Resolves a claimed request whose result has been stored.
  void succeed();

  /// Claims a queued request, takes it out of its pipeline and fails it with Cancelled.
  /// Returns false, doing nothing, once it was dispatched, expired or cancelled.
  bool cancel();

  /// Suspends the calling coroutine until the request is finished. Cancelling the coroutine (any
  /// type its filter lets through) cancels a queued request, which then finishes with Cancelled
  /// and the wait returns; once dispatched, terminal cancellation abandons the wait with
  /// `boost::system::system_error(operation_aborted)` and the request carries on without it,
  /// while other types are ignored.
  boost::asio::awaitable<void> wait();

  /// The handler async_wait() completes.
  using WaitHandler = boost::asio::any_completion_handler<void(boost::system::error_code)>;

  /// Completes `handler` on `executor` once `request` is finished, with the cancellation rules of
  /// wait() applied to the handler's cancellation slot (operation_aborted when abandoned).
  static void async_wait(std::shared_ptr<RequestBase> request,
                         boost::asio::any_io_executor executor, WaitHandler handler);

 protected:
  /// Rethrows the stored error, if any. Call only once finished.
  void rethrow_if_failed() const {
    if (error_) {
      std::rethrow_exception(error_);
    }
  }

 private:
  static constexpr std::uint8_t queued_state = 0;
  static constexpr std::uint8_t claimed_state = 1;
  static constexpr std::uint8_t finished_state = 2;

  void finish();
  void abandon_wait(boost::asio::cancellation_type type, bool& abandoned);
  async::ConditionVariable& finished_condition_locked();
  static boost::asio::awaitable<bool> wait_unless_abandoned(std::shared_ptr<RequestBase> request,
                                                            std::shared_ptr<bool> abandoned);

  const std::size_t cost_;
  const Clock::time_point submitted_at_;
  const Clock::time_point deadline_;
  const std::weak_ptr<Pipeline> pipeline_;
  std::atomic<std::uint8_t> state_{queued_state};
  // Written by the claimant before the release store of finished_state, read after an acquire
  // load of it, so it needs no lock.
  std::exception_ptr error_;
  std::mutex mutex_;
  // Guarded by mutex_. Made by the first wait: most requests are finished before anyone awaits
  // them, and a condition variable costs an allocation.
  std::optional<async::ConditionVariable> finished_condition_;
};

/// A request's outcome for a given result type.
template <typename Result>
class ResultState : public RequestBase {
 public:
  using RequestBase::RequestBase;

  /// Stores the result; the claimant then calls succeed().
  void set_result(Result result) { result_.emplace(std::move(result)); }

  /// Moves the result out, or rethrows the failure. Call only once finished, and only once.
  Result take_result() {
    rethrow_if_failed();
    return std::move(*result_);
  }

 private:
  std::optional<Result> result_;
};

/// A request carrying its record until dispatch.
template <typename Record, typename Result>
class Request final : public ResultState<Result> {
 public:
  Request(Record record, std::size_t cost, RequestBase::Clock::time_point submitted_at,
          RequestBase::Clock::time_point deadline, std::weak_ptr<Pipeline> pipeline)
      : ResultState<Result>(cost, submitted_at, deadline, std::move(pipeline)),
        record_(std::move(record)) {}

  /// Moves the record out for the process function.
  Record take_record() { return std::move(record_); }

 private:
  Record record_;
};

/// How the pipeline holds requests.
using RequestPtr = std::shared_ptr<RequestBase>;

}  // namespace tensorstream::detail
