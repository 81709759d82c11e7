// Throughput and added latency of DynamicBatcher on one thread with a trivial process function.
//
// Targets: >= 1,000,000 records/s through the batcher with batches of 256, and < 20 us added per
// record at low load beyond batch_timeout. Run pinned to one core: taskset -c 0 ./batcher_bench

#include "tensorstream/batching/dynamic_batcher.hpp"

#include <benchmark/benchmark.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <vector>

namespace {

namespace asio = boost::asio;
using tensorstream::DynamicBatcher;
using tensorstream::ResultFuture;
using Clock = std::chrono::steady_clock;
using Batcher = DynamicBatcher<std::int64_t, std::int64_t>;

asio::awaitable<std::vector<std::int64_t>> identity(std::vector<std::int64_t> batch) {
  co_return batch;
}

// Runs `task` on `context` until it finishes; the batcher's idle timer keeps the context from
// running out of work, so run() alone would not return.
template <typename Task>
void drive(asio::io_context& context, Task task) {
  bool done = false;
  std::exception_ptr error;
  context.restart();
  asio::co_spawn(context, std::move(task), [&](std::exception_ptr e) {
    error = e;
    done = true;
  });
  while (!done) {
    if (context.run_one() == 0) {
      throw std::logic_error("the benchmark coroutine stalled");
    }
  }
  if (error) {
    std::rethrow_exception(error);
  }
}

// Records submitted one at a time by one producer, results awaited in order.
void BM_SubmitThroughput(benchmark::State& state) {
  constexpr std::int64_t records = 256 * 64;
  asio::io_context context(1);
  Batcher batcher(context.get_executor(), {.process_fn = identity, .max_batch_size = 256});
  batcher.start();
  std::vector<ResultFuture<std::int64_t>> futures;
  futures.reserve(records);
  std::int64_t checksum = 0;
  for (auto _ : state) {
    drive(context, [&]() -> asio::awaitable<void> {
      futures.clear();
      for (std::int64_t i = 0; i < records; ++i) {
        futures.push_back(co_await batcher.submit(i));
      }
      for (auto& future : futures) {
        checksum += co_await future.get();
      }
    });
  }
  drive(context, [&]() -> asio::awaitable<void> { co_await batcher.stop(); });
  benchmark::DoNotOptimize(checksum);
  state.SetItemsProcessed(state.iterations() * records);
  state.counters["avg_batch_size"] = batcher.stats().avg_batch_size;
}
BENCHMARK(BM_SubmitThroughput)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same records handed over 256 at a time with submit_batch().
void BM_SubmitBatchThroughput(benchmark::State& state) {
  constexpr std::int64_t records = 256 * 64;
  asio::io_context context(1);
  Batcher batcher(context.get_executor(), {.process_fn = identity, .max_batch_size = 256});
  batcher.start();
  std::int64_t checksum = 0;
  for (auto _ : state) {
    drive(context, [&]() -> asio::awaitable<void> {
      std::vector<std::vector<ResultFuture<std::int64_t>>> pending;
      for (std::int64_t first = 0; first < records; first += 256) {
        std::vector<std::int64_t> chunk(256);
        for (std::int64_t i = 0; i < 256; ++i) {
          chunk[static_cast<std::size_t>(i)] = first + i;
        }
        pending.push_back(co_await batcher.submit_batch(std::move(chunk)));
      }
      for (auto& futures : pending) {
        for (auto& future : futures) {
          checksum += co_await future.get();
        }
      }
    });
  }
  drive(context, [&]() -> asio::awaitable<void> { co_await batcher.stop(); });
  benchmark::DoNotOptimize(checksum);
  state.SetItemsProcessed(state.iterations() * records);
  state.counters["avg_batch_size"] = batcher.stats().avg_batch_size;
}
BENCHMARK(BM_SubmitBatchThroughput)->Unit(benchmark::kMillisecond)->UseRealTime();

// One record at a time, nothing else queued: submit to result, minus batch_timeout (range(0),
// in microseconds; 0 dispatches every record at once through max_batch_size 1). Each iteration
// also times a bare steady_timer of the same duration, untimed by the benchmark, because on a
// busy or virtual machine the operating system's timer wake-up dominates: overhead_p50_us is the
// median of (added - bare timer lateness), the batcher's own share.
void BM_LowLoadAddedLatency(benchmark::State& state) {
  const auto timeout = std::chrono::microseconds(state.range(0));
  asio::io_context context(1);
  Batcher batcher(context.get_executor(), {.process_fn = identity,
                                           .max_batch_size = timeout.count() == 0 ? 1u : 256u,
                                           .batch_timeout = timeout});
  batcher.start();
  std::vector<double> added_us;
  std::vector<double> timer_late_us;
  std::vector<double> overhead_us;
  const auto micros_since = [](Clock::time_point start, std::chrono::microseconds expected) {
    const std::chrono::duration<double, std::micro> waited = Clock::now() - start;
    return waited.count() - static_cast<double>(expected.count());
  };
  for (auto _ : state) {
    drive(context, [&]() -> asio::awaitable<void> {
      const auto start = Clock::now();
      auto future = co_await batcher.submit(1);
      benchmark::DoNotOptimize(co_await future.get());
      added_us.push_back(micros_since(start, timeout));
    });
    if (timeout.count() > 0) {
      state.PauseTiming();
      drive(context, [&]() -> asio::awaitable<void> {
        const auto start = Clock::now();
        asio::steady_timer timer(context, timeout);
        co_await timer.async_wait(asio::use_awaitable);
        timer_late_us.push_back(micros_since(start, timeout));
      });
      overhead_us.push_back(added_us.back() - timer_late_us.back());
      state.ResumeTiming();
    }
  }
  drive(context, [&]() -> asio::awaitable<void> { co_await batcher.stop(); });
  const auto percentile = [](std::vector<double>& values, double q) {
    std::sort(values.begin(), values.end());
    return values[static_cast<std::size_t>(q * static_cast<double>(values.size() - 1))];
  };
  state.counters["added_p50_us"] = percentile(added_us, 0.50);
  state.counters["added_p99_us"] = percentile(added_us, 0.99);
  if (!overhead_us.empty()) {
    state.counters["timer_late_p50_us"] = percentile(timer_late_us, 0.50);
    state.counters["overhead_p50_us"] = percentile(overhead_us, 0.50);
  }
}
BENCHMARK(BM_LowLoadAddedLatency)
    ->Arg(0)
    ->Arg(1000)
    ->Arg(5000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
