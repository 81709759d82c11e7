#pragma once
/// @file
/// Dynamic batching by estimated token count, for LLM endpoints.

#include "tensorstream/batching/cost_estimator.hpp"
#include "tensorstream/batching/dynamic_batcher.hpp"
#include "tensorstream/batching/token_estimator.hpp"
#include "tensorstream/error.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace tensorstream {

/// A DynamicBatcher whose cost is an estimated token count, so one inference call receives a
/// token-budgeted batch of prompts.
///
/// A record's tokens are, in order of precedence: the count given to submit() (estimated_tokens,
/// then estimated_cost), the configured token_estimator (else cost_estimator),
/// `record.estimate_tokens()` (TokenEstimator), `record.estimate_cost()` (CostEstimator), and
/// default_token_estimate. Everything else, thread safety included, is as for DynamicBatcher.
template <typename Record, typename Result>
class TokenBatcher : public DynamicBatcher<Record, Result> {
  using Base = DynamicBatcher<Record, Result>;

 public:
  using typename Base::ProcessFn;
  /// Estimates a record's tokens.
  using TokenFn = std::function<std::size_t(const Record&)>;

  /// Construction options, with the token names of the Python original and its defaults.
  struct Options {
    ProcessFn inference_fn{};  ///< The inference function; wins over process_fn.
    ProcessFn process_fn{};    ///< Accepted as well; one of the two is required.
    TokenFn token_estimator{}; ///< Tokens of a record without an explicit count.
    TokenFn cost_estimator{};  ///< Used when token_estimator is not set.
    std::size_t target_batch_tokens = 32000;  ///< Stop filling once a batch holds this many.
    std::size_t max_batch_size = 256;         ///< Most records per batch.
    std::size_t min_batch_size = 1;  ///< Hold smaller batches for more records; <= max_batch_size.
    /// Fill time allowed after a batch's first record.
    std::chrono::steady_clock::duration batch_timeout = std::chrono::milliseconds(50);
    std::size_t max_queue_size = 5000;        ///< Waiting records before submit() suspends.
    std::size_t prefetch_batches = 2;         ///< Assembled batches waiting for processing.
    std::size_t default_token_estimate = 1;   ///< Tokens when nothing else gives a count.
    std::size_t max_concurrent_batches = 1;   ///< Batches processed at the same time.
  };

  /// Creates a stopped batcher whose loops run on `executor`. Throws InvalidArgument
  /// ("TokenBatcher requires either 'inference_fn' or 'process_fn'") without a function, and as
  /// DynamicBatcher does for bad limits.
  TokenBatcher(boost::asio::any_io_executor executor, Options options)
      : Base(std::move(executor), to_base_options(std::move(options)), "TokenBatcher") {}

  /// Queues `record` and returns its future, as DynamicBatcher::submit() does; an explicit
  /// `estimated_tokens` wins over `estimated_cost`.
  boost::asio::awaitable<ResultFuture<Result>> submit(
      Record record, std::optional<std::size_t> estimated_tokens = std::nullopt,
      std::optional<std::size_t> estimated_cost = std::nullopt) {
    return Base::submit(std::move(record),
                        SubmitOptions{estimated_tokens ? estimated_tokens : estimated_cost,
                                      std::nullopt});
  }

  /// submit() with per-request options; `estimated_cost` there counts tokens.
  boost::asio::awaitable<ResultFuture<Result>> submit(Record record, SubmitOptions options) {
    return Base::submit(std::move(record), std::move(options));
  }

 private:
  static typename Base::Options to_base_options(Options options) {
    ProcessFn process_fn =
        options.inference_fn ? std::move(options.inference_fn) : std::move(options.process_fn);
    if (!process_fn) {
      throw InvalidArgument("TokenBatcher requires either 'inference_fn' or 'process_fn'");
    }
    TokenFn estimator = options.token_estimator ? std::move(options.token_estimator)
                                                : std::move(options.cost_estimator);
    typename Base::Options base;
    base.process_fn = std::move(process_fn);
    // Always set, so the base class never falls back to its own, token-unaware, precedence.
    base.cost_estimator = [estimator = std::move(estimator),
                           fallback = options.default_token_estimate](const Record& record) {
      if (estimator) {
        return estimator(record);
      }
      if constexpr (TokenEstimator<Record>) {
        return static_cast<std::size_t>(record.estimate_tokens());
      } else if constexpr (CostEstimator<Record>) {
        return static_cast<std::size_t>(record.estimate_cost());
      } else {
        return fallback;
      }
    };
    base.target_batch_cost = options.target_batch_tokens;
    base.max_batch_size = options.max_batch_size;
    base.min_batch_size = options.min_batch_size;
    base.batch_timeout = options.batch_timeout;
    base.max_queue_size = options.max_queue_size;
    base.prefetch_batches = options.prefetch_batches;
    base.default_cost = options.default_token_estimate;
    base.max_concurrent_batches = options.max_concurrent_batches;
    return base;
  }
};

}  // namespace tensorstream
