// min_batch_size holding, stop racing submit, cancellation of requests, submitters and waiters,
// deadlines, concurrent batches and multi-threaded submitters.

#include "tensorstream/batching/dynamic_batcher.hpp"
#include "tensorstream/error.hpp"

#include "batching/coroutine_harness.hpp"

#include <gtest/gtest.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::Latch;
using testing::run;
using testing::settle;
using testing::sleep_for;

using Batcher = testing::IntBatcher;
using Batches = testing::Batches;
using testing::times_ten;

// A process function held at `gate` that records every batch it is given.
Batcher::ProcessFn gated_identity(Latch& gate, Batches& batches) {
  return [&gate, &batches](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
    batches.push_back(batch);
    co_await gate.wait();
    co_return batch;
  };
}

// Returns once the batcher has held `count` batches at their timeout for min_batch_size: from
// then on, that nothing was dispatched means something, where after a sleep it might only mean
// that the batcher had not looked yet. (run() fails the test if it never comes.)
asio::awaitable<void> until_held(const Batcher& batcher, std::uint64_t count) {
  while (batcher.stats().total_held < count) co_await sleep_for(1ms);
}

template <typename Exception>
asio::awaitable<void> expect_failure(ResultFuture<int>& future, const char* message) {
  try {
    co_await future.get();
    ADD_FAILURE() << "expected " << message;
  } catch (const Exception& e) {
    EXPECT_STREQ(e.what(), message);
  }
}

TEST(BatcherFlowControl, MinBatchSizeHoldsASmallBatchInPlaceUntilMoreRecordsArrive) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches),
                                           .max_batch_size = 10,
                                           .min_batch_size = 3,
                                           .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto first = co_await batcher.submit(1);
    auto second = co_await batcher.submit(2);
    co_await until_held(batcher, 1);  // the batch of two, past its timeout, is not dispatched
    EXPECT_TRUE(batches.empty());
    EXPECT_FALSE(first.ready());
    auto third = co_await batcher.submit(3);
    EXPECT_EQ(co_await first.get(), 10);
    EXPECT_EQ(co_await second.get(), 20);
    EXPECT_EQ(co_await third.get(), 30);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{1, 2, 3}}));
  EXPECT_EQ(batcher.stats().total_held, 1u);  // once, however often it was looked at
}

TEST(BatcherFlowControl, CancellingARecordOfAHeldBatchShrinksIt) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches),
                                           .min_batch_size = 3,
                                           .batch_timeout = 1ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto first = co_await batcher.submit(1);
    auto second = co_await batcher.submit(2);
    co_await until_held(batcher, 1);  // with two records
    EXPECT_TRUE(first.cancel());
    auto third = co_await batcher.submit(3);
    co_await settle();  // two live records: still held
    EXPECT_TRUE(batches.empty());
    auto fourth = co_await batcher.submit(4);
    EXPECT_EQ(co_await second.get(), 20);
    EXPECT_EQ(co_await third.get(), 30);
    EXPECT_EQ(co_await fourth.get(), 40);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{2, 3, 4}}));
  EXPECT_EQ(batcher.stats().total_cancelled, 1u);
}

TEST(BatcherFlowControl, StopFlushesAHeldBatch) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = times_ten(batches), .min_batch_size = 5, .batch_timeout = 1ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(4);
    co_await until_held(batcher, 1);
    EXPECT_FALSE(future.ready());
    co_await batcher.stop();
    EXPECT_TRUE(future.ready());
    EXPECT_EQ(co_await future.get(), 40);
  });
  EXPECT_EQ(batches, (Batches{{4}}));
}

TEST(BatcherFlowControl, HeldBatchDoesNotDeadlockAgainstASmallQueue) {
  asio::io_context context;
  Batches batches;
  // The Python original re-enqueues a held batch behind producers blocked on a full queue; with
  // a queue of one that deadlocks. Held in place, the batch takes no queue room.
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches),
                                           .min_batch_size = 4,
                                           .batch_timeout = 1ms,
                                           .max_queue_size = 1});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    std::vector<ResultFuture<int>> futures;
    for (int round = 0; round < 2; ++round) {
      futures.push_back(co_await batcher.submit(round * 4));
      co_await until_held(batcher, round + 1);  // the batch of one, past its timeout
      EXPECT_FALSE(futures.back().ready());
      for (int record = round * 4 + 1; record < round * 4 + 4; ++record) {
        futures.push_back(co_await batcher.submit(record));
      }
    }
    for (std::size_t i = 0; i < futures.size(); ++i) {
      EXPECT_EQ(co_await futures[i].get(), static_cast<int>(i) * 10);
    }
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(batcher.stats().total_held, 2u);
}

TEST(BatcherFlowControl, FullBatchIsDispatchedBelowMinBatchSize) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches),
                                           .target_batch_cost = 5,
                                           .min_batch_size = 3,
                                           .batch_timeout = 1ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(9, 50);
    EXPECT_EQ(co_await future.get(), 90);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{9}}));
}

TEST(BatcherFlowControl, SubmitRacingStopEitherFailsOrIsProcessed) {
  asio::io_context context;
  std::mutex mutex;
  std::size_t processed = 0;
  Batcher batcher(context.get_executor(),
                  {.process_fn = [&](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
                     {
                       std::lock_guard lock(mutex);
                       processed += batch.size();
                     }
                     co_return batch;
                   },
                   .max_batch_size = 8,
                   .batch_timeout = 1ms,
                   .max_queue_size = 16});
  batcher.start();
  constexpr int producers = 6;
  std::atomic<int> accepted{0};
  std::atomic<int> rejected{0};
  std::atomic<int> resolved{0};
  std::atomic<int> finished{0};
  asio::steady_timer stopper(context, 20ms);
  for (int p = 0; p < producers; ++p) {
    asio::co_spawn(
        asio::make_strand(context),
        [&, p]() -> asio::awaitable<void> {
          std::vector<ResultFuture<int>> futures;
          for (int i = 0;; ++i) {
            try {
              futures.push_back(co_await batcher.submit(p * 1'000'000 + i));
              ++accepted;
            } catch (const StateError&) {
              ++rejected;
              break;
            }
            if (i % 16 == 15) {
              co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
            }
          }
          for (std::size_t i = 0; i < futures.size(); ++i) {
            EXPECT_EQ(co_await futures[i].get(), p * 1'000'000 + static_cast<int>(i));
            ++resolved;
          }
          ++finished;
        },
        asio::detached);
  }
  bool stopped = false;
  stopper.async_wait([&](boost::system::error_code) {
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
          co_await batcher.stop();
          stopped = true;
        },
        asio::detached);
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] { context.run_for(30s); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_TRUE(stopped);
  EXPECT_EQ(finished.load(), producers);
  EXPECT_EQ(rejected.load(), producers);
  EXPECT_GT(accepted.load(), 0);
  EXPECT_EQ(resolved.load(), accepted.load());
  EXPECT_EQ(processed, static_cast<std::size_t>(accepted.load()));
  const auto stats = batcher.stats();
  EXPECT_EQ(stats.total_submitted, static_cast<std::uint64_t>(accepted.load()));
  EXPECT_EQ(stats.total_completed, static_cast<std::uint64_t>(accepted.load()));
}

TEST(BatcherFlowControl, CancelRemovesQueuedRequestsBeforeDispatch) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches),
                                           .max_batch_size = 1,
                                           .max_queue_size = 4,
                                           .prefetch_batches = 1});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    // 0 is being processed, 1 waits in the prefetch slot, 2 in the aggregator, 3 and 4 queued.
    std::vector<ResultFuture<int>> futures;
    for (int record = 0; record < 5; ++record) {
      futures.push_back(co_await batcher.submit(record));
    }
    co_await settle();
    EXPECT_FALSE(futures[0].cancel());  // already dispatched
    EXPECT_TRUE(futures[1].cancel());
    EXPECT_TRUE(futures[3].cancel());
    EXPECT_FALSE(futures[3].cancel());
    EXPECT_TRUE(futures[1].ready());
    co_await expect_failure<Cancelled>(futures[1], "batched request was cancelled before dispatch");
    co_await expect_failure<Cancelled>(futures[3], "batched request was cancelled before dispatch");
    gate.open();
    EXPECT_EQ(co_await futures[0].get(), 0);
    EXPECT_EQ(co_await futures[2].get(), 2);
    EXPECT_EQ(co_await futures[4].get(), 4);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0}, {2}, {4}}));
  const auto stats = batcher.stats();
  EXPECT_EQ(stats.total_cancelled, 2u);
  EXPECT_EQ(stats.total_completed, 3u);
}

TEST(BatcherFlowControl, CancellingTheWaitCancelsAQueuedRequest) {
  using namespace asio::experimental::awaitable_operators;
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches),
                                           .max_batch_size = 1,
                                           .prefetch_batches = 1});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto held = co_await batcher.submit(0);
    auto queued = co_await batcher.submit(1);
    co_await settle();
    asio::steady_timer timeout(context, 5ms);
    // The timer wins; the losing wait is cancelled, and with it the queued request.
    auto outcome = co_await (queued.get() || timeout.async_wait(asio::use_awaitable));
    EXPECT_EQ(outcome.index(), 1u);
    gate.open();
    EXPECT_EQ(co_await held.get(), 0);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0}}));
  EXPECT_EQ(batcher.stats().total_cancelled, 1u);
}

TEST(BatcherFlowControl, ExpiredDeadlineFailsARequestWithoutDispatchingIt) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches),
                                           .max_batch_size = 1,
                                           .prefetch_batches = 1});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto held = co_await batcher.submit(0);
    const auto start = std::chrono::steady_clock::now();
    const SubmitOptions soon{.deadline = start + 20ms};
    const SubmitOptions later{.deadline = start + 1h};
    auto late = co_await batcher.submit(1, soon);
    auto on_time = co_await batcher.submit(2, later);
    // Processing is still held: the deadline alone resolves the future.
    co_await expect_failure<DeadlineExceeded>(
        late, "DynamicBatcher: request deadline passed before dispatch");
    const auto waited = std::chrono::steady_clock::now() - start;
    EXPECT_GE(waited, 20ms);
    EXPECT_LT(waited, 5s);
    gate.open();
    EXPECT_EQ(co_await held.get(), 0);
    EXPECT_EQ(co_await on_time.get(), 2);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0}, {2}}));
  EXPECT_EQ(batcher.stats().total_expired, 1u);
}

TEST(BatcherFlowControl, PastDeadlineFailsAtOnce) {
  asio::io_context context;
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = times_ten(batches), .batch_timeout = 1ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const SubmitOptions options{.deadline = std::chrono::steady_clock::now() - 1ms};
    auto future = co_await batcher.submit(1, options);
    co_await expect_failure<DeadlineExceeded>(
        future, "DynamicBatcher: request deadline passed before dispatch");
    co_await batcher.stop();
  });
  EXPECT_TRUE(batches.empty());
}

TEST(BatcherFlowControl, ConcurrentBatchesMatchResultsToRecords) {
  asio::io_context context;
  Latch all_in_flight(context.get_executor());
  int in_flight = 0;
  int most_in_flight = 0;
  int batches_seen = 0;
  Batcher batcher(
      context.get_executor(),
      {.process_fn = [&](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
         most_in_flight = std::max(most_in_flight, ++in_flight);
         const int order = batches_seen++;
         if (in_flight == 3) {
           all_in_flight.open();
         }
         co_await all_in_flight.wait();
         // Later batches finish first, so results come back out of order.
         co_await sleep_for(std::chrono::milliseconds(2 * std::max(0, 6 - order)));
         --in_flight;
         std::vector<int> results;
         for (const int record : batch) {
           results.push_back(record * 10);
         }
         co_return results;
       },
       .max_batch_size = 2,
       .max_concurrent_batches = 3});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    std::vector<int> records(12);
    for (int i = 0; i < 12; ++i) {
      records[static_cast<std::size_t>(i)] = i;
    }
    auto futures = co_await batcher.submit_batch(records);
    for (int i = 0; i < 12; ++i) {
      EXPECT_EQ(co_await futures[static_cast<std::size_t>(i)].get(), i * 10);
    }
    co_await batcher.stop();
  });
  EXPECT_EQ(most_in_flight, 3);
  EXPECT_EQ(batches_seen, 6);
}

TEST(BatcherFlowControl, MultiThreadedSubmittersAreSafe) {
  asio::io_context context;
  std::mutex mutex;
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = [&](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
                     {
                       std::lock_guard lock(mutex);
                       batches.push_back(batch);
                     }
                     std::vector<int> results;
                     for (const int record : batch) {
                       results.push_back(record + 1);
                     }
                     co_return results;
                   },
                   .max_batch_size = 32,
                   .batch_timeout = 1ms,
                   .max_queue_size = 64,
                   .max_concurrent_batches = 2});
  batcher.start();
  constexpr int producers = 8;
  constexpr int per_producer = 400;
  std::atomic<int> finished{0};
  for (int p = 0; p < producers; ++p) {
    asio::co_spawn(
        context,
        [&, p]() -> asio::awaitable<void> {
          std::vector<ResultFuture<int>> futures;
          for (int i = 0; i < per_producer; ++i) {
            futures.push_back(co_await batcher.submit(p * per_producer + i));
          }
          for (int i = 0; i < per_producer; ++i) {
            const int result = co_await futures[static_cast<std::size_t>(i)].get();
            EXPECT_EQ(result, p * per_producer + i + 1);
          }
          if (++finished == producers) {
            co_await batcher.stop();
          }
        },
        asio::detached);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { context.run_for(60s); });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  EXPECT_EQ(finished.load(), producers);
  EXPECT_FALSE(batcher.is_running());
  // Every record reaches the process function exactly once, and within a batch each producer's
  // records keep their submission order. (Batches run two at a time, so the order in which they
  // were recorded says nothing.)
  std::vector<int> all;
  for (const auto& batch : batches) {
    EXPECT_LE(batch.size(), 32u);
    std::vector<int> last(producers, -1);
    for (const int record : batch) {
      auto& previous = last[static_cast<std::size_t>(record / per_producer)];
      EXPECT_GT(record, previous);
      previous = record;
    }
    all.insert(all.end(), batch.begin(), batch.end());
  }
  std::sort(all.begin(), all.end());
  std::vector<int> expected(producers * per_producer);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(all, expected);
  EXPECT_EQ(batcher.stats().total_completed, static_cast<std::uint64_t>(producers * per_producer));
}

// A coroutine of its own whose cancellation the test emits.
struct Cancellable {
  asio::cancellation_signal signal;
  bool done = false;
  std::exception_ptr error;

  template <typename Body>
  void spawn(asio::io_context& context, Body body) {
    asio::co_spawn(context, std::move(body),
                   asio::bind_cancellation_slot(signal.slot(), [this](std::exception_ptr e) {
                     error = e;
                     done = true;
                   }));
  }
};

// Submits the records 0 to count - 1 and lets them settle where they go.
asio::awaitable<std::vector<ResultFuture<int>>> submit_and_settle(Batcher& batcher, int count) {
  std::vector<ResultFuture<int>> futures;
  for (int record = 0; record < count; ++record) {
    futures.push_back(co_await batcher.submit(record));
  }
  co_await settle();
  co_return futures;
}

bool is_operation_aborted(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    return e.code() == asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

TEST(BatcherFlowControl, CancellingASuspendedSubmitWithdrawsTheRecordsNotYetAdmitted) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches),
                                           .max_batch_size = 1,
                                           .max_queue_size = 2,
                                           .prefetch_batches = 1});
  batcher.start();
  Cancellable submitter;
  run(context, [&]() -> asio::awaitable<void> {
    // 0 is being processed, 1 waits in the prefetch slot, 2 in the aggregator, 3 and 4 queued.
    auto futures = co_await submit_and_settle(batcher, 5);
    submitter.spawn(context, [&]() -> asio::awaitable<void> {
      const std::vector<int> records{5, 6, 7};
      auto parked = co_await batcher.submit_batch(records);
      ADD_FAILURE() << "the suspended submit_batch() returned";
    });
    bool later_done = false;
    std::vector<ResultFuture<int>> later;
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
          later.push_back(co_await batcher.submit(8));
          later_done = true;
        },
        asio::detached);
    co_await settle();
    EXPECT_FALSE(submitter.done);
    EXPECT_TRUE(futures[3].cancel());  // frees one slot: 5 is admitted, 6 and 7 still wait
    co_await settle();
    submitter.signal.emit(asio::cancellation_type::terminal);
    co_await settle();
    EXPECT_TRUE(submitter.done);
    EXPECT_TRUE(is_operation_aborted(submitter.error));
    EXPECT_FALSE(later_done);  // the queue is still full: 4 and 5
    gate.open();
    EXPECT_EQ(co_await futures[0].get(), 0);
    EXPECT_EQ(co_await futures[4].get(), 4);
    co_await settle();
    EXPECT_TRUE(later_done);
    EXPECT_EQ(co_await later.at(0).get(), 8);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{0}, {1}, {2}, {4}, {5}, {8}}));
  const auto stats = batcher.stats();
  EXPECT_EQ(stats.total_submitted, 9u);
  EXPECT_EQ(stats.total_cancelled, 3u);  // 3, 6 and 7
  EXPECT_EQ(stats.total_completed, 6u);
}

TEST(BatcherFlowControl, ACancelledSuspendedSubmitDoesNotHoldUpStop) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches),
                                           .max_batch_size = 1,
                                           .max_queue_size = 1,
                                           .prefetch_batches = 1});
  batcher.start();
  Cancellable submitter;
  run(context, [&]() -> asio::awaitable<void> {
    auto futures = co_await submit_and_settle(batcher, 4);
    submitter.spawn(context,
                    [&]() -> asio::awaitable<void> { auto parked = co_await batcher.submit(4); });
    bool stopped = false;
    asio::co_spawn(
        context,
        [&]() -> asio::awaitable<void> {
          co_await batcher.stop();
          stopped = true;
        },
        asio::detached);
    co_await settle();
    submitter.signal.emit(asio::cancellation_type::terminal);
    gate.open();
    co_await settle();
    EXPECT_TRUE(stopped);
    EXPECT_TRUE(is_operation_aborted(submitter.error));
    for (int record = 0; record < 4; ++record) {
      EXPECT_EQ(co_await futures[static_cast<std::size_t>(record)].get(), record);
    }
  });
  EXPECT_EQ(batches, (Batches{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(batcher.stats().total_cancelled, 1u);
}

TEST(BatcherFlowControl, OnlyTerminalCancellationAbandonsTheWaitForADispatchedRequest) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = gated_identity(gate, batches), .max_batch_size = 1});
  batcher.start();
  Cancellable patient;
  Cancellable impatient;
  int patient_result = -1;
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(7);
    auto other = co_await batcher.submit(8);
    co_await settle();  // 7 is being processed
    patient.spawn(context, [&]() -> asio::awaitable<void> {
      co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
      patient_result = co_await future.get();
    });
    impatient.spawn(context, [&]() -> asio::awaitable<void> {
      co_await asio::this_coro::reset_cancellation_state(asio::enable_total_cancellation());
      co_await other.get();
    });
    co_await settle();
    patient.signal.emit(asio::cancellation_type::total);
    co_await settle();
    EXPECT_FALSE(patient.done);
    impatient.signal.emit(asio::cancellation_type::total);  // 8 is queued: cancelled
    co_await settle();
    EXPECT_TRUE(impatient.done);
    try {
      std::rethrow_exception(impatient.error);
    } catch (const Cancelled& e) {
      EXPECT_STREQ(e.what(), "batched request was cancelled before dispatch");
    } catch (...) {
      ADD_FAILURE() << "expected Cancelled";
    }
    gate.open();
    co_await settle();
    EXPECT_TRUE(patient.done);
    EXPECT_FALSE(patient.error);
    EXPECT_EQ(patient_result, 7);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{7}}));
  EXPECT_EQ(batcher.stats().total_cancelled, 1u);
}

TEST(BatcherFlowControl, TerminalCancellationOfADispatchedWaitLeavesTheRequestRunning) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches)});
  batcher.start();
  Cancellable waiter;
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(3);
    co_await settle();
    while (batches.empty()) {
      co_await sleep_for(1ms);  // batch_timeout: then 3 is dispatched and held at the gate
    }
    waiter.spawn(context, [&]() -> asio::awaitable<void> { co_await future.get(); });
    co_await settle();
    waiter.signal.emit(asio::cancellation_type::terminal);
    co_await settle();
    EXPECT_TRUE(waiter.done);
    EXPECT_TRUE(is_operation_aborted(waiter.error));
    EXPECT_FALSE(future.ready());
    gate.open();
    EXPECT_EQ(co_await future.get(), 3);
    co_await batcher.stop();
  });
  EXPECT_EQ(batcher.stats().total_cancelled, 0u);
  EXPECT_EQ(batcher.stats().total_completed, 1u);
}

TEST(BatcherFlowControl, AsyncWaitFollowsTheCancellationRulesOfItsSlot) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(),
                  {.process_fn = gated_identity(gate, batches), .max_batch_size = 1});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto dispatched = co_await batcher.submit(1);
    auto queued = co_await batcher.submit(2);
    co_await settle();
    asio::cancellation_signal dispatched_signal;
    asio::cancellation_signal queued_signal;
    std::vector<boost::system::error_code> dispatched_outcomes;
    std::vector<boost::system::error_code> queued_outcomes;
    dispatched.async_wait(asio::bind_cancellation_slot(
        dispatched_signal.slot(),
        [&](boost::system::error_code error) { dispatched_outcomes.push_back(error); }));
    queued.async_wait(asio::bind_cancellation_slot(
        queued_signal.slot(),
        [&](boost::system::error_code error) { queued_outcomes.push_back(error); }));
    co_await settle();
    queued_signal.emit(asio::cancellation_type::partial);
    dispatched_signal.emit(asio::cancellation_type::partial);
    co_await settle();
    EXPECT_EQ(queued_outcomes, std::vector<boost::system::error_code>(1));
    EXPECT_TRUE(queued.ready());
    co_await expect_failure<Cancelled>(queued, "batched request was cancelled before dispatch");
    EXPECT_TRUE(dispatched_outcomes.empty());
    dispatched_signal.emit(asio::cancellation_type::terminal);
    co_await settle();
    EXPECT_EQ(dispatched_outcomes,
              (std::vector<boost::system::error_code>{asio::error::operation_aborted}));
    gate.open();
    EXPECT_EQ(co_await dispatched.get(), 1);
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (Batches{{1}}));
  EXPECT_EQ(batcher.stats().total_cancelled, 1u);
}

TEST(BatcherFlowControl, EveryConcurrentStopReturns) {
  asio::io_context context;
  Latch gate(context.get_executor());
  Batches batches;
  Batcher batcher(context.get_executor(), {.process_fn = gated_identity(gate, batches)});
  batcher.start();
  int stopped = 0;
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(1);
    for (int i = 0; i < 3; ++i) {
      asio::co_spawn(
          context,
          [&]() -> asio::awaitable<void> {
            co_await batcher.stop();
            ++stopped;
          },
          asio::detached);
    }
    co_await settle();
    EXPECT_EQ(stopped, 0);
    gate.open();
    co_await batcher.stop();
    co_await settle();
    EXPECT_EQ(stopped, 3);
    EXPECT_TRUE(future.ready());
  });
  EXPECT_EQ(batches, (Batches{{1}}));
}

}  // namespace
}  // namespace tensorstream
