#include "tensorstream/batching/cost_estimator.hpp"
#include "tensorstream/batching/dynamic_batcher.hpp"
#include "tensorstream/error.hpp"

#include "batching/coroutine_harness.hpp"

#include <gtest/gtest.h>

#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::Latch;
using testing::run;
using testing::settle;

using Batcher = testing::IntBatcher;
using Batches = testing::Batches;
using testing::times_ten;

std::vector<int> iota(int count) {
  std::vector<int> values(static_cast<std::size_t>(count));
  std::iota(values.begin(), values.end(), 0);
  return values;
}

std::vector<int> flatten(const Batches& batches) {
  std::vector<int> all;
  for (const auto& batch : batches) {
    all.insert(all.end(), batch.begin(), batch.end());
  }
  return all;
}

// Awaits every future in order.
asio::awaitable<std::vector<int>> get_all(std::vector<ResultFuture<int>>& futures) {
  std::vector<int> results;
  for (auto& future : futures) {
    results.push_back(co_await future.get());
  }
  co_return results;
}

// Submits `records` one by one (each with `cost`, if given) without awaiting any result.
asio::awaitable<std::vector<ResultFuture<int>>> submit_each(
    Batcher& batcher, const std::vector<int>& records,
    std::optional<std::size_t> cost = std::nullopt) {
  std::vector<ResultFuture<int>> futures;
  for (const int record : records) {
    futures.push_back(co_await batcher.submit(record, cost));
  }
  co_return futures;
}

struct Sized {
  int size = 0;
  int estimate_cost() const { return size; }
};

static_assert(CostEstimator<Sized>);
static_assert(!CostEstimator<int>);

TEST(DynamicBatcher, SubmitReturnsTheResult) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  batcher.start();
  const int result = run(context, [&]() -> asio::awaitable<int> {
    auto future = co_await batcher.submit(4);
    const int value = co_await future.get();
    co_await batcher.stop();
    co_return value;
  });
  EXPECT_EQ(result, 40);
  EXPECT_EQ(batches, (Batches{{4}}));
}

TEST(DynamicBatcher, TenSubmitsKeepTheirOrder) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  batcher.start();
  const auto results = run(context, [&]() -> asio::awaitable<std::vector<int>> {
    auto futures = co_await submit_each(batcher, iota(10));
    auto values = co_await get_all(futures);
    co_await batcher.stop();
    co_return values;
  });
  EXPECT_EQ(results, (std::vector<int>{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}));
  EXPECT_EQ(flatten(batches), iota(10));
}

TEST(DynamicBatcher, ExplicitCostBeatsTheEstimator) {
  asio::io_context context;
  Batches batches;
  int estimator_calls = 0;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches),
                   .cost_estimator = [&](const int&) -> std::size_t {
                     ++estimator_calls;
                     return 100;
                   },
                   .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(1, 5);
    EXPECT_EQ(co_await future.get(), 10);
    co_await batcher.stop();
  });
  EXPECT_EQ(estimator_calls, 0);
  EXPECT_EQ(batcher.stats().total_batch_cost, 5u);
}

TEST(DynamicBatcher, EstimatorIsCalledWithTheRecord) {
  asio::io_context context;
  Batches batches;
  std::vector<int> estimated;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches),
                   .cost_estimator = [&](const int& record) -> std::size_t {
                     estimated.push_back(record);
                     return static_cast<std::size_t>(record) * 2;
                   },
                   .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const std::vector<int> records{3, 8};
    auto futures = co_await submit_each(batcher, records);
    co_await get_all(futures);
    co_await batcher.stop();
  });
  EXPECT_EQ(estimated, (std::vector<int>{3, 8}));
  EXPECT_EQ(batcher.stats().total_batch_cost, 22u);
}

TEST(DynamicBatcher, CostEstimatorConceptGivesTheCost) {
  asio::io_context context;
  std::vector<int> seen;
  DynamicBatcher<Sized, int> batcher(
      context.get_executor(),
      {.process_fn = [&](std::vector<Sized> batch) -> asio::awaitable<std::vector<int>> {
         std::vector<int> results;
         for (const auto& record : batch) {
           seen.push_back(record.size);
           results.push_back(record.size);
         }
         co_return results;
       },
       .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const Sized four{4};
    const Sized six{6};
    auto first = co_await batcher.submit(four);
    auto second = co_await batcher.submit(six);
    EXPECT_EQ(co_await first.get(), 4);
    EXPECT_EQ(co_await second.get(), 6);
    co_await batcher.stop();
  });
  EXPECT_EQ(seen, (std::vector<int>{4, 6}));
  EXPECT_EQ(batcher.stats().total_batch_cost, 10u);
}

TEST(DynamicBatcher, DefaultCostAppliesWithoutEstimates) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches), .batch_timeout = 5ms, .default_cost = 7});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const std::vector<int> records{1, 2};
    auto futures = co_await submit_each(batcher, records);
    co_await get_all(futures);
    co_await batcher.stop();
  });
  EXPECT_EQ(batcher.stats().total_batch_cost, 14u);
}

TEST(DynamicBatcher, CostBudgetBoundsBatches) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  // Long enough that a batch's submissions always land within its timeout, also
                  // in a loaded sanitizer build (5 ms split a batch there); only the last waits.
                  {.process_fn = times_ten(batches), .target_batch_cost = 5, .batch_timeout = 500ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto futures = co_await submit_each(batcher, iota(10), 2);
    co_await get_all(futures);
    co_await batcher.stop();
  });
  // Records are taken while the cost is below 5: 2, 4, then a third reaches 6.
  EXPECT_EQ(batches, (Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
}

TEST(DynamicBatcher, FirstRecordIsTakenEvenOverBudget) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches), .target_batch_cost = 5, .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const std::vector<int> records{1, 2};
    auto futures = co_await submit_each(batcher, records, 50);
    const auto results = co_await get_all(futures);
    EXPECT_EQ(results, (std::vector<int>{10, 20}));
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{1}, {2}}));
}

TEST(DynamicBatcher, MaxBatchSizeCapsBatches) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  // Long enough that three submissions always land within one batch's timeout,
                  // also in a slow sanitizer build; only the last batch waits it out.
                  {.process_fn = times_ten(batches), .max_batch_size = 3, .batch_timeout = 500ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto futures = co_await submit_each(batcher, iota(10));
    co_await get_all(futures);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
}

TEST(DynamicBatcher, LoneRecordIsDispatchedByTheTimeout) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches), .batch_timeout = 20ms});
  batcher.start();
  const auto elapsed = run(context, [&]() -> asio::awaitable<std::chrono::steady_clock::duration> {
    const auto start = std::chrono::steady_clock::now();
    auto future = co_await batcher.submit(7);
    EXPECT_EQ(co_await future.get(), 70);
    const auto waited = std::chrono::steady_clock::now() - start;
    co_await batcher.stop();
    co_return waited;
  });
  EXPECT_GE(elapsed, 20ms);
  EXPECT_LT(elapsed, 5s);
  EXPECT_EQ(batches, (Batches{{7}}));
  // The queue wait covers the timeout; percentiles err upwards, by at most ~3%.
  const auto stats = batcher.stats();
  EXPECT_GE(stats.queue_wait_p50_s, 0.020);
  EXPECT_GE(stats.queue_wait_p99_s, stats.queue_wait_p50_s);
  EXPECT_LT(stats.queue_wait_p99_s, 5.0);
}

TEST(DynamicBatcher, FullQueueSuspendsSubmitUntilProcessingResumes) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = [&](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
                     co_await gate.wait();
                     batches.push_back(batch);
                     co_return batch;
                   },
                   .max_batch_size = 1,
                   .max_queue_size = 1,
                   .prefetch_batches = 1});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    // Held processing takes 0, the prefetch slot 1, the aggregator 2, the queue 3.
    const std::vector<int> records{0, 1, 2, 3};
    auto futures = co_await submit_each(batcher, records);
    co_await settle();
    bool submitted = false;
    std::vector<ResultFuture<int>> late;
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
          late.push_back(co_await batcher.submit(4));
          submitted = true;
        },
        asio::detached);
    co_await settle();
    EXPECT_FALSE(submitted);
    EXPECT_EQ(batcher.stats().total_completed, 0u);
    gate.open();
    co_await settle();
    EXPECT_TRUE(submitted);
    futures.push_back(std::move(late.at(0)));
    const auto results = co_await get_all(futures);
    EXPECT_EQ(results, (std::vector<int>{0, 1, 2, 3, 4}));
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0}, {1}, {2}, {3}, {4}}));
}

TEST(DynamicBatcher, ProcessExceptionFailsTheWholeBatchAndProcessingContinues) {
  asio::io_context context;
  Batcher batcher(context.get_executor(),
                  {.process_fn = [](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
                     if (batch.front() < 0) {
                       throw std::runtime_error("boom");
                     }
                     co_return batch;
                   },
                   .max_batch_size = 2,
                   .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    std::vector<int> records{-1, 2};
    auto failing = co_await batcher.submit_batch(std::move(records));
    for (auto& future : failing) {
      try {
        co_await future.get();
        ADD_FAILURE() << "expected the process function's exception";
      } catch (const std::runtime_error& e) {
        EXPECT_STREQ(e.what(), "boom");
      }
    }
    auto next = co_await batcher.submit(3);
    EXPECT_EQ(co_await next.get(), 3);
    co_await batcher.stop();
  });
  const auto stats = batcher.stats();
  EXPECT_EQ(stats.total_failed, 2u);
  EXPECT_EQ(stats.total_completed, 3u);
}

TEST(DynamicBatcher, WrongResultCountFailsEveryFutureOfTheBatch) {
  asio::io_context context;
  Batcher batcher(context.get_executor(),
                  {.process_fn = [](std::vector<int>) -> asio::awaitable<std::vector<int>> {
                     co_return std::vector<int>{1};
                   },
                   .max_batch_size = 2,
                   .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    std::vector<int> records{5, 6};
    auto futures = co_await batcher.submit_batch(std::move(records));
    for (auto& future : futures) {
      try {
        co_await future.get();
        ADD_FAILURE() << "expected a result-count error";
      } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "process_fn returned 1 results for batch of 2 records");
      }
    }
    co_await batcher.stop();
  });
}

TEST(DynamicBatcher, SubmitBatchReturnsFuturesInOrder) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches), .target_batch_cost = 4, .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const std::vector<int> records{1, 2, 3};
    std::vector<std::size_t> costs{1, 3, 1};
    auto futures = co_await batcher.submit_batch(records, std::move(costs));
    const auto results = co_await get_all(futures);
    EXPECT_EQ(results, (std::vector<int>{10, 20, 30}));
    std::vector<std::size_t> too_few{1, 1};
    try {
      co_await batcher.submit_batch(records, std::move(too_few));
      ADD_FAILURE() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
      EXPECT_STREQ(e.what(), "DynamicBatcher: submit_batch got 2 costs for 3 records");
    }
    co_await batcher.stop();
  });
  // The explicit costs 1 + 3 reach the target of 4 after two records.
  EXPECT_EQ(batches, (Batches{{1, 2}, {3}}));
  EXPECT_EQ(batcher.stats().total_submitted, 3u);
}

TEST(DynamicBatcher, ScopedRunStartsAndStops) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  const int result = run(context, [&]() -> asio::awaitable<int> {
    co_return co_await batcher.run([&]() -> asio::awaitable<int> {
      EXPECT_TRUE(batcher.is_running());
      auto future = co_await batcher.submit(2);
      co_return co_await future.get();
    });
  });
  EXPECT_EQ(result, 20);
  EXPECT_FALSE(batcher.is_running());
}

TEST(DynamicBatcher, ScopedRunStopsAndRethrowsWhenTheBodyThrows) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  EXPECT_THROW(run(context,
                   [&]() -> asio::awaitable<void> {
                     co_await batcher.run([&]() -> asio::awaitable<void> {
                       co_await batcher.submit(1);
                       throw std::logic_error("body failed");
                     });
                   }),
               std::logic_error);
  EXPECT_FALSE(batcher.is_running());
  // The record submitted before the body threw was still processed by the graceful stop.
  EXPECT_EQ(batches, (Batches{{1}}));
}

TEST(DynamicBatcher, StartingTwiceThrows) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches)});
  batcher.start();
  try {
    batcher.start();
    ADD_FAILURE() << "expected StateError";
  } catch (const StateError& e) {
    EXPECT_STREQ(e.what(), "DynamicBatcher is already running");
  }
  run(context, [&]() -> asio::awaitable<void> { co_await batcher.stop(); });
}

TEST(DynamicBatcher, SubmitWhenNotRunningThrows) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  auto submit_and_expect_error = [&]() -> asio::awaitable<void> {
    try {
      co_await batcher.submit(1);
      ADD_FAILURE() << "expected StateError";
    } catch (const StateError& e) {
      EXPECT_STREQ(e.what(), "DynamicBatcher is not running");
    }
  };
  run(context, [&]() -> asio::awaitable<void> {
    co_await submit_and_expect_error();
    batcher.start();
    co_await batcher.stop();
    co_await submit_and_expect_error();
  });
  EXPECT_EQ(batcher.stats().total_submitted, 0u);
  EXPECT_TRUE(batches.empty());
}

TEST(DynamicBatcher, StatsCountRecordsBatchesAndCosts) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches), .max_batch_size = 3, .batch_timeout = 5ms});
  EXPECT_EQ(batcher.stats().utilization(), 0.0);
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto futures = co_await submit_each(batcher, iota(6), 2);
    co_await get_all(futures);
    co_await batcher.stop();
  });
  const auto stats = batcher.stats();
  EXPECT_EQ(stats.total_submitted, 6u);
  EXPECT_EQ(stats.total_completed, 6u);
  EXPECT_EQ(stats.total_batches, 2u);
  EXPECT_EQ(stats.total_batch_cost, 12u);
  EXPECT_DOUBLE_EQ(stats.avg_batch_size, 3.0);
  EXPECT_DOUBLE_EQ(stats.avg_batch_cost, 6.0);
  EXPECT_EQ(stats.total_failed, 0u);
  EXPECT_EQ(stats.total_cancelled, 0u);
  EXPECT_EQ(stats.total_expired, 0u);
  EXPECT_EQ(stats.total_held, 0u);  // min_batch_size 1 holds nothing
  EXPECT_GT(stats.busy_time_s + stats.idle_time_s, 0.0);
  EXPECT_GE(stats.utilization(), 0.0);
  EXPECT_LE(stats.utilization(), 1.0);
  EXPECT_GE(stats.queue_wait_p99_s, stats.queue_wait_p50_s);
  EXPECT_LT(stats.queue_wait_p99_s, 5.0);
}

TEST(DynamicBatcher, RestartsAfterStop) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  run(context, [&]() -> asio::awaitable<void> {
    for (int round = 0; round < 3; ++round) {
      batcher.start();
      EXPECT_TRUE(batcher.is_running());
      auto future = co_await batcher.submit(round);
      EXPECT_EQ(co_await future.get(), round * 10);
      co_await batcher.stop();
      EXPECT_FALSE(batcher.is_running());
    }
  });
  EXPECT_EQ(batches, (Batches{{0}, {1}, {2}}));
}

TEST(DynamicBatcher, StopWhenNotRunningReturnsAtOnce) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches)});
  run(context, [&]() -> asio::awaitable<void> { co_await batcher.stop(); });
  EXPECT_FALSE(batcher.is_running());
}

TEST(DynamicBatcher, RejectsInvalidOptions) {
  asio::io_context context;
  Batches batches;
  try {
    Batcher batcher(context.get_executor(),
                    {.process_fn = times_ten(batches), .max_batch_size = 3, .min_batch_size = 4});
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "DynamicBatcher: min_batch_size (4) exceeds max_batch_size (3)");
  }
  try {
    Batcher batcher(context.get_executor(), {});
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "DynamicBatcher requires 'process_fn'");
  }
  try {
    Batcher batcher(context.get_executor(),
                    {.process_fn = times_ten(batches), .max_queue_size = 0});
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "DynamicBatcher: max_queue_size must be at least 1");
  }
}

TEST(DynamicBatcher, FutureWaitCompletesPlainCallbacks) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 1ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(5);
    bool called = false;
    future.async_wait([&](boost::system::error_code error) {
      EXPECT_FALSE(error);
      EXPECT_TRUE(future.ready());
      called = true;
    });
    co_await batcher.stop();
    co_await settle();
    EXPECT_TRUE(called);
    EXPECT_EQ(co_await future.get(), 50);
  });
}

TEST(DynamicBatcher, FutureResultIsTakenOnce) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(3);
    EXPECT_TRUE(future.valid());
    EXPECT_EQ(co_await future.get(), 30);
    EXPECT_FALSE(future.valid());
    EXPECT_FALSE(future.ready());
    EXPECT_THROW(co_await future.get(), StateError);
    co_await batcher.stop();
  });
}

}  // namespace
}  // namespace tensorstream
