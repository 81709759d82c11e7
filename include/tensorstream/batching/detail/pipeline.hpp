#pragma once
/// @file
/// The record-type-independent engine behind DynamicBatcher: queue, aggregation, processing.

#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/batching/batch_stats.hpp"
#include "tensorstream/batching/detail/latency_histogram.hpp"
#include "tensorstream/batching/detail/request.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"

namespace tensorstream::detail {

/// Batching limits, validated by the Pipeline constructor.
struct PipelineLimits {
  std::size_t target_batch_cost;       ///< Stop filling once the batch costs this much.
  std::size_t max_batch_size;          ///< Hard cap on records per batch.
  std::size_t min_batch_size;          ///< Hold smaller batches (unless full or stopping).
  std::chrono::nanoseconds batch_timeout;  ///< Fill time allowed after a batch's first record.
  std::size_t max_queue_size;          ///< Records waiting before submit() suspends.
  std::size_t prefetch_batches;        ///< Assembled batches waiting for a processing loop.
  std::size_t max_concurrent_batches;  ///< Processing loops.
};

/// Queues requests, assembles cost-budgeted batches and hands them to processing loops.
///
/// One mutex guards every queue, and every coroutine parks on an async::ConditionVariable with a
/// predicate over that state. Submitters (any thread) append to the submission queue or, when it
/// is full, park in FIFO order until admitted. The aggregation coroutine parks until submitters,
/// processing loops, stop() or its own deadline timer wake it. It owns the batch being built,
/// which stays in place at the head of the queue until it is cut, so a batch held for
/// min_batch_size keeps its order and never competes with parked submitters for room.
/// Processing coroutines take cut batches from a queue of prefetch_batches. Unlike Boost 1.81's
/// experimental channels, nothing queued is ever dropped on shutdown and every waiter is woken.
class TENSORSTREAM_API Pipeline : public std::enable_shared_from_this<Pipeline> {
 public:
  using Clock = std::chrono::steady_clock;

  /// Throws InvalidArgument, naming `name` and the option, for limits out of range.
  Pipeline(boost::asio::any_io_executor executor, PipelineLimits limits, std::string name);
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;
  virtual ~Pipeline();

  /// "DynamicBatcher" or "TokenBatcher", for messages.
  const std::string& name() const noexcept { return name_; }
  /// The executor the batching coroutines run on.
  const boost::asio::any_io_executor& executor() const noexcept { return executor_; }

  /// Spawns the aggregation and processing coroutines. Throws StateError unless stopped.
  void start();
  /// Stops accepting submissions; what was accepted is still processed. Does not wait.
  void request_stop();
  /// request_stop(), then waits until every accepted request is resolved and the coroutines
  /// have finished. Returns at once when stopped. Cancelling the caller abandons the wait with
  /// operation_aborted; the pipeline still stops.
  boost::asio::awaitable<void> stop();
  /// Whether submissions are accepted.
  bool is_running() const;
  /// A snapshot of the counters.
  BatchStats stats() const;

  /// Queues `requests` in order, suspending while the queue is full. Throws StateError when not
  /// running; once it has not thrown, every request will be resolved. `requests` must stay valid
  /// until it returns. Cancelling the caller while it is suspended withdraws the requests not
  /// admitted yet (they fail with Cancelled and count as cancelled) and throws operation_aborted;
  /// those already admitted stay queued.
  boost::asio::awaitable<void> enqueue(std::span<const RequestPtr> requests);

  /// Drops a request that was claimed by cancel() from the submission queue, freeing its slot.
  void forget(const RequestBase& request);

 protected:
  /// Runs the process function over `batch` (claimed requests, in submission order) and stores
  /// one result in each; throwing fails the whole batch.
  virtual boost::asio::awaitable<void> process(std::span<const RequestPtr> batch) = 0;

 private:
  enum class State { stopped, running, stopping };
  enum class AggregatorWait { none, records, room };

  /// A submit() parked while the queue is full; its requests are admitted in order.
  struct ParkedSubmit {
    std::span<const RequestPtr> requests;
    bool admitted = false;  // guarded by mutex_
    // One per parked submit, so that admission wakes exactly the submitters it admitted.
    async::ConditionVariable admission;
  };

  struct DeadlineEntry {
    Clock::time_point deadline;
    RequestPtr request;
  };

  static bool later_deadline(const DeadlineEntry& a, const DeadlineEntry& b) noexcept {
    return a.deadline > b.deadline;
  }

  static boost::asio::awaitable<void> aggregate(std::shared_ptr<Pipeline> self);
  static boost::asio::awaitable<void> run_processor(std::shared_ptr<Pipeline> self);
  boost::asio::awaitable<std::vector<RequestPtr>> next_batch();
  void worker_finished();

  // Helpers that need mutex_ held.
  void withdraw_locked(const ParkedSubmit& parked, std::vector<RequestPtr>& withdrawn);
  void expire_locked(Clock::time_point now, std::vector<RequestPtr>& expired);
  void admit_locked();
  void accept_locked(Clock::time_point now);
  bool should_cut_locked(Clock::time_point now) const;
  void cut_locked();
  void add_deadline_locked(const RequestPtr& request);
  void wake_aggregator_locked(AggregatorWait reason);

  const boost::asio::any_io_executor executor_;
  const PipelineLimits limits_;
  const std::string name_;

  mutable std::mutex mutex_;
  State state_ = State::stopped;
  std::deque<RequestPtr> queue_;      // submission order; the first accepted_ form the batch
  std::size_t accepted_ = 0;          // records in the batch being built
  std::size_t accepted_cost_ = 0;
  Clock::time_point batch_deadline_;  // when the batch being built stops taking records
  bool batch_held_ = false;           // whether that batch was held at its deadline
  std::deque<std::shared_ptr<ParkedSubmit>> parked_;
  std::vector<RequestPtr> cut_;       // assembled, waiting for room in ready_
  std::deque<std::vector<RequestPtr>> ready_;
  async::ConditionVariable batch_ready_;  // processing loops: ready_ or aggregator_done_
  std::vector<DeadlineEntry> deadlines_;  // min-heap; entries of claimed requests are stale
  std::size_t deadlines_after_compaction_ = 0;
  AggregatorWait aggregator_wait_ = AggregatorWait::none;  // what would make it re-check
  bool aggregator_woken_ = false;
  async::ConditionVariable aggregator_wake_;  // the aggregation coroutine: aggregator_woken_
  Clock::time_point aggregator_wakes_at_;
  bool aggregator_done_ = false;
  std::size_t workers_ = 0;
  std::uint64_t stops_ = 0;          // times the pipeline came to a stop
  async::ConditionVariable stopped_;  // stop(): stops_ advancing

  // Used only by the aggregation coroutine; the timer's handler touches neither.
  boost::asio::steady_timer timer_;  // wakes the aggregator at a deadline
  Clock::time_point timer_deadline_ = Clock::time_point::max();

  mutable std::mutex stats_mutex_;
  std::uint64_t completed_ = 0;  // guarded by stats_mutex_, like the members up to queue_wait_
  std::uint64_t failed_ = 0;
  std::uint64_t batches_ = 0;
  std::uint64_t batch_cost_ = 0;
  Clock::duration busy_{};
  Clock::duration idle_{};
  LatencyHistogram queue_wait_;
  std::atomic<std::uint64_t> submitted_{0};
  std::atomic<std::uint64_t> cancelled_{0};
  std::atomic<std::uint64_t> expired_{0};
  std::atomic<std::uint64_t> held_{0};
};

}  // namespace tensorstream::detail
