#pragma once
/// @file
/// Cost-budgeted dynamic batching of records submitted one at a time, on Boost.Asio coroutines.

#include "tensorstream/batching/batch_stats.hpp"
#include "tensorstream/batching/cost_estimator.hpp"
#include "tensorstream/batching/detail/pipeline.hpp"
#include "tensorstream/batching/detail/request.hpp"
#include "tensorstream/batching/result_future.hpp"
#include "tensorstream/batching/submit_options.hpp"
#include "tensorstream/error.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tensorstream {

/// Collects records submitted one at a time into batches, each handed to one call of an async
/// process function, sized by an estimated cost budget.
///
/// A batch starts with the first waiting record (always taken, even over budget) and keeps
/// taking records, in submission order, while its cost is below `target_batch_cost`, it holds
/// fewer than `max_batch_size` records and `batch_timeout` has not passed since its first record.
/// A batch smaller than `min_batch_size` is then held in place, ahead of later records, until
/// enough records arrive or stop() flushes it (a batch that is already full by cost or size goes
/// regardless). Up to `prefetch_batches` assembled batches wait for `max_concurrent_batches`
/// processing loops. When `max_queue_size` records wait, submit() suspends: backpressure, never
/// dropping.
///
/// Thread safety: submit(), submit_batch(), stop(), start(), stats() and is_running() may be
/// called concurrently from any thread, including every thread of a multi-threaded io_context;
/// waiters are resumed on their own executors. The process function runs on the executor given
/// to the constructor; with `max_concurrent_batches` > 1 it may run concurrently with itself.
/// Estimators run on the submitting thread.
///
/// Destroying a running batcher requests a stop; the pipeline then drains in the background
/// as long as the executor runs. Prefer `co_await stop()`.
template <typename Record, typename Result>
class DynamicBatcher {
 public:
  /// Takes a batch in submission order; returns one result per record, in the same order.
  using ProcessFn =
      std::function<boost::asio::awaitable<std::vector<Result>>(std::vector<Record>)>;
  /// Estimates a record's cost.
  using CostFn = std::function<std::size_t(const Record&)>;

  /// Construction options. The defaults are those of the Python original.
  struct Options {
    ProcessFn process_fn{};    ///< Required.
    CostFn cost_estimator{};   ///< Cost of a record without an explicit one; see submit().
    std::size_t target_batch_cost = 32000;  ///< Stop filling once a batch costs this much.
    std::size_t max_batch_size = 256;       ///< Most records per batch.
    std::size_t min_batch_size = 1;  ///< Hold smaller batches for more records; <= max_batch_size.
    /// Fill time allowed after a batch's first record.
    std::chrono::steady_clock::duration batch_timeout = std::chrono::milliseconds(50);
    std::size_t max_queue_size = 5000;  ///< Waiting records before submit() suspends.
    std::size_t prefetch_batches = 2;   ///< Assembled batches waiting for processing.
    std::size_t default_cost = 1;       ///< Cost when nothing else gives one.
    std::size_t max_concurrent_batches = 1;  ///< Batches processed at the same time.
  };

  /// Creates a stopped batcher whose loops run on `executor`. Throws InvalidArgument without a
  /// process function, for a zero limit, or when min_batch_size exceeds max_batch_size.
  DynamicBatcher(boost::asio::any_io_executor executor, Options options)
      : DynamicBatcher(std::move(executor), std::move(options), "DynamicBatcher") {}

  DynamicBatcher(const DynamicBatcher&) = delete;
  DynamicBatcher& operator=(const DynamicBatcher&) = delete;

  /// Requests a stop if running; see the class notes.
  ~DynamicBatcher() { engine_->request_stop(); }

  /// Starts the aggregation and processing loops. Throws StateError if already running (or
  /// still stopping). A stopped batcher can be started again.
  void start() { engine_->start(); }

  /// Stops accepting records, processes everything accepted before (flushing a held batch
  /// regardless of min_batch_size), and returns once every future is resolved. A submit() that
  /// races it either throws StateError or is processed. Returns at once when not running.
  /// Cancelling the awaiting coroutine abandons only the wait (operation_aborted).
  boost::asio::awaitable<void> stop() { return engine_->stop(); }

  /// Whether submissions are accepted: between start() and stop().
  bool is_running() const { return engine_->is_running(); }

  /// A snapshot of the counters.
  BatchStats stats() const { return engine_->stats(); }

  /// The scoped form (Python's `async with`): start(), `co_await body()`, then stop() whether
  /// the body returned or threw; rethrows the body's exception, or returns its value.
  template <typename Body>
  std::invoke_result_t<Body&> run(Body body) {
    using Value = typename std::invoke_result_t<Body&>::value_type;
    start();
    std::exception_ptr error;
    if constexpr (std::is_void_v<Value>) {
      try {
        co_await body();
      } catch (...) {
        error = std::current_exception();
      }
      co_await stop();
      if (error) {
        std::rethrow_exception(error);
      }
    } else {
      std::optional<Value> value;
      try {
        value.emplace(co_await body());
      } catch (...) {
        error = std::current_exception();
      }
      co_await stop();
      if (error) {
        std::rethrow_exception(error);
      }
      co_return std::move(*value);
    }
  }

  /// Queues `record`, suspending while the queue is full, and returns its future; awaiting the
  /// future's get() yields the result. The cost is `estimated_cost` if given, else the
  /// configured cost_estimator's, else `record.estimate_cost()` (CostEstimator), else
  /// default_cost. Throws StateError when not running. Cancelling the awaiting coroutine while it
  /// is suspended withdraws the record (counted as cancelled) and throws
  /// `boost::system::system_error(operation_aborted)`.
  boost::asio::awaitable<ResultFuture<Result>> submit(
      Record record, std::optional<std::size_t> estimated_cost = std::nullopt) {
    return submit(std::move(record), SubmitOptions{estimated_cost, std::nullopt});
  }

  /// submit() with per-request options: an explicit cost and a dispatch deadline.
  boost::asio::awaitable<ResultFuture<Result>> submit(Record record, SubmitOptions options) {
    auto request = make_request(std::move(record), options.estimated_cost, options.deadline);
    ResultFuture<Result> future(request, engine_->executor());
    const detail::RequestPtr queued = std::move(request);
    co_await engine_->enqueue(std::span<const detail::RequestPtr>(&queued, 1));
    co_return future;
  }

  /// Queues `records` in order (suspending while the queue is full) and returns their futures in
  /// the same order. `estimated_costs`, if given, has one cost per record. Throws
  /// InvalidArgument for a length mismatch and StateError when not running; either way nothing
  /// is queued. Cancelled while suspended, it withdraws the records not admitted yet and throws
  /// operation_aborted; those already admitted are processed.
  boost::asio::awaitable<std::vector<ResultFuture<Result>>> submit_batch(
      std::vector<Record> records,
      std::optional<std::vector<std::size_t>> estimated_costs = std::nullopt) {
    if (estimated_costs && estimated_costs->size() != records.size()) {
      throw InvalidArgument(engine_->name() + ": submit_batch got " +
                            std::to_string(estimated_costs->size()) + " costs for " +
                            std::to_string(records.size()) + " records");
    }
    std::vector<detail::RequestPtr> requests;
    std::vector<ResultFuture<Result>> futures;
    requests.reserve(records.size());
    futures.reserve(records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
      auto request = make_request(
          std::move(records[i]),
          estimated_costs ? std::optional<std::size_t>((*estimated_costs)[i]) : std::nullopt,
          std::nullopt);
      futures.push_back(ResultFuture<Result>(request, engine_->executor()));
      requests.push_back(std::move(request));
    }
    co_await engine_->enqueue(requests);
    co_return futures;
  }

 protected:
  /// For subclasses: `name` prefixes error messages.
  DynamicBatcher(boost::asio::any_io_executor executor, Options options, std::string name)
      : engine_(make_engine(std::move(executor), options, std::move(name))),
        cost_estimator_(std::move(options.cost_estimator)),
        default_cost_(options.default_cost) {}

 private:
  using Clock = std::chrono::steady_clock;
  using RequestType = detail::Request<Record, Result>;

  class Engine final : public detail::Pipeline {
   public:
    Engine(boost::asio::any_io_executor executor, detail::PipelineLimits limits,
           std::string name, ProcessFn process_fn)
        : Pipeline(std::move(executor), limits, std::move(name)),
          process_fn_(std::move(process_fn)) {}

   protected:
    boost::asio::awaitable<void> process(std::span<const detail::RequestPtr> batch) override {
      std::vector<Record> records;
      records.reserve(batch.size());
      for (const auto& request : batch) {
        records.push_back(static_cast<RequestType&>(*request).take_record());
      }
      std::vector<Result> results = co_await process_fn_(std::move(records));
      if (results.size() != batch.size()) {
        throw Error("process_fn returned " + std::to_string(results.size()) +
                    " results for batch of " + std::to_string(batch.size()) + " records");
      }
      for (std::size_t i = 0; i < batch.size(); ++i) {
        static_cast<RequestType&>(*batch[i]).set_result(std::move(results[i]));
      }
    }

   private:
    ProcessFn process_fn_;
  };

  static std::shared_ptr<Engine> make_engine(boost::asio::any_io_executor executor,
                                             Options& options, std::string name) {
    if (!options.process_fn) {
      throw InvalidArgument(name + " requires 'process_fn'");
    }
    const detail::PipelineLimits limits{
        options.target_batch_cost,
        options.max_batch_size,
        options.min_batch_size,
        std::chrono::duration_cast<std::chrono::nanoseconds>(options.batch_timeout),
        options.max_queue_size,
        options.prefetch_batches,
        options.max_concurrent_batches,
    };
    return std::make_shared<Engine>(std::move(executor), limits, std::move(name),
                                    std::move(options.process_fn));
  }

  std::shared_ptr<RequestType> make_request(Record record, std::optional<std::size_t> cost,
                                            std::optional<Clock::time_point> deadline) const {
    const std::size_t resolved = cost ? *cost : estimate_cost(record);
    return std::make_shared<RequestType>(std::move(record), resolved, Clock::now(),
                                         deadline.value_or(Clock::time_point::max()), engine_);
  }

  std::size_t estimate_cost(const Record& record) const {
    if (cost_estimator_) {
      return cost_estimator_(record);
    }
    if constexpr (CostEstimator<Record>) {
      return static_cast<std::size_t>(record.estimate_cost());
    } else {
      return default_cost_;
    }
  }

  std::shared_ptr<Engine> engine_;
  CostFn cost_estimator_;
  std::size_t default_cost_;
};

}  // namespace tensorstream
