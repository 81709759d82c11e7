#include "tensorstream/batching/prompt.hpp"
#include "tensorstream/batching/token_batcher.hpp"
#include "tensorstream/batching/token_estimator.hpp"
#include "tensorstream/error.hpp"

#include "batching/coroutine_harness.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using testing::run;

using TextBatches = std::vector<std::vector<std::string>>;

// Answers "answer: <text>" and records every batch of prompt texts.
TokenBatcher<Prompt, std::string>::ProcessFn answer(TextBatches& batches) {
  return [&batches](std::vector<Prompt> batch) -> asio::awaitable<std::vector<std::string>> {
    std::vector<std::string> texts;
    std::vector<std::string> results;
    for (const auto& prompt : batch) {
      texts.push_back(prompt.text);
      results.push_back("answer: " + prompt.text);
    }
    batches.push_back(std::move(texts));
    co_return results;
  };
}

// A record whose token count is its length.
struct TokenRecord {
  int length = 0;
  int estimate_tokens() const { return length; }
};

// A record that knows both; tokens must win.
struct DualRecord {
  int tokens = 0;
  int cost = 0;
  int estimate_tokens() const { return tokens; }
  int estimate_cost() const { return cost; }
};

static_assert(TokenEstimator<TokenRecord>);
static_assert(TokenEstimator<Prompt>);
static_assert(!TokenEstimator<int>);

template <typename Record>
typename TokenBatcher<Record, int>::ProcessFn count_records() {
  return [](std::vector<Record> batch) -> asio::awaitable<std::vector<int>> {
    co_return std::vector<int>(batch.size(), static_cast<int>(batch.size()));
  };
}

TEST(TokenBatcher, AcceptsAnInferenceFunction) {
  asio::io_context context;
  TextBatches batches;
  TokenBatcher<Prompt, std::string> batcher(
      context.get_executor(), {.inference_fn = answer(batches), .batch_timeout = 5ms});
  const auto result = run(context, [&]() -> asio::awaitable<std::string> {
    co_return co_await batcher.run([&]() -> asio::awaitable<std::string> {
      Prompt prompt("hi");
      auto future = co_await batcher.submit(std::move(prompt));
      co_return co_await future.get();
    });
  });
  EXPECT_EQ(result, "answer: hi");
}

TEST(TokenBatcher, AcceptsAProcessFunction) {
  asio::io_context context;
  TextBatches batches;
  TokenBatcher<Prompt, std::string> batcher(context.get_executor(),
                                            {.process_fn = answer(batches), .batch_timeout = 5ms});
  const auto result = run(context, [&]() -> asio::awaitable<std::string> {
    co_return co_await batcher.run([&]() -> asio::awaitable<std::string> {
      auto future = co_await batcher.submit(Prompt("there"));
      co_return co_await future.get();
    });
  });
  EXPECT_EQ(result, "answer: there");
  EXPECT_EQ(batches, (TextBatches{{"there"}}));
}

TEST(TokenBatcher, RequiresAFunction) {
  asio::io_context context;
  try {
    TokenBatcher<Prompt, std::string> batcher(context.get_executor(), {});
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "TokenBatcher requires either 'inference_fn' or 'process_fn'");
  }
}

TEST(TokenBatcher, EstimatedTokensWinOverEveryOtherEstimate) {
  asio::io_context context;
  int estimator_calls = 0;
  TokenBatcher<TokenRecord, int> batcher(
      context.get_executor(),
      {.inference_fn = count_records<TokenRecord>(),
       .token_estimator = [&](const TokenRecord&) -> std::size_t {
         ++estimator_calls;
         return 1000;
       },
       .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const TokenRecord record{50};
    auto tokens_only = co_await batcher.submit(record, 7);
    auto tokens_and_cost = co_await batcher.submit(record, 3, 900);
    auto cost_only = co_await batcher.submit(record, std::nullopt, 11);
    co_await tokens_only.get();
    co_await tokens_and_cost.get();
    co_await cost_only.get();
    co_await batcher.stop();
  });
  EXPECT_EQ(estimator_calls, 0);
  EXPECT_EQ(batcher.stats().total_batch_cost, 7u + 3u + 11u);
}

TEST(TokenBatcher, TokenEstimatorConceptGivesTheTokens) {
  asio::io_context context;
  TokenBatcher<TokenRecord, int> batcher(
      context.get_executor(),
      {.inference_fn = count_records<TokenRecord>(), .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const TokenRecord record{12};
    auto future = co_await batcher.submit(record);
    co_await future.get();
    co_await batcher.stop();
  });
  EXPECT_EQ(batcher.stats().total_batch_cost, 12u);
}

TEST(TokenBatcher, EstimateTokensWinsOverEstimateCost) {
  asio::io_context context;
  TokenBatcher<DualRecord, int> batcher(
      context.get_executor(), {.inference_fn = count_records<DualRecord>(), .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const DualRecord record{5, 500};
    auto future = co_await batcher.submit(record);
    co_await future.get();
    co_await batcher.stop();
  });
  EXPECT_EQ(batcher.stats().total_batch_cost, 5u);
}

TEST(TokenBatcher, TokenEstimatorFunctionIsCalledWithTheRecord) {
  asio::io_context context;
  std::vector<int> seen;
  TokenBatcher<TokenRecord, int> batcher(context.get_executor(),
                                         {.inference_fn = count_records<TokenRecord>(),
                                          .token_estimator = [&](const TokenRecord& record) {
                                            seen.push_back(record.length);
                                            return static_cast<std::size_t>(record.length) + 1;
                                          },
                                          .cost_estimator = [](const TokenRecord&) -> std::size_t {
                                            ADD_FAILURE() << "token_estimator must win";
                                            return 0;
                                          },
                                          .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    const TokenRecord first{4};
    const TokenRecord second{9};
    auto a = co_await batcher.submit(first);
    auto b = co_await batcher.submit(second);
    co_await a.get();
    co_await b.get();
    co_await batcher.stop();
  });
  EXPECT_EQ(seen, (std::vector<int>{4, 9}));
  EXPECT_EQ(batcher.stats().total_batch_cost, 5u + 10u);
}

TEST(TokenBatcher, TargetBatchTokensBoundsBatches) {
  asio::io_context context;
  std::vector<std::size_t> sizes;
  TokenBatcher<int, int> batcher(
      context.get_executor(),
      {.inference_fn = [&](std::vector<int> batch) -> asio::awaitable<std::vector<int>> {
         sizes.push_back(batch.size());
         co_return batch;
       },
       .token_estimator = [](const int&) -> std::size_t { return 2; },
       .target_batch_tokens = 5,
       .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    std::vector<int> records(10, 0);
    auto futures = co_await batcher.submit_batch(records);
    for (auto& future : futures) {
      co_await future.get();
    }
    co_await batcher.stop();
  });
  EXPECT_EQ(sizes, (std::vector<std::size_t>{3, 3, 3, 1}));
}

TEST(TokenBatcher, DefaultTokenEstimateAppliesToPlainRecords) {
  asio::io_context context;
  TokenBatcher<int, int> batcher(context.get_executor(),
                                 {.inference_fn = count_records<int>(),
                                  .batch_timeout = 5ms,
                                  .default_token_estimate = 6});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    auto future = co_await batcher.submit(1);
    co_await future.get();
    co_await batcher.stop();
  });
  EXPECT_EQ(batcher.stats().total_batch_cost, 6u);
}

TEST(TokenBatcher, PromptFlowsThroughWithItsTokenEstimate) {
  asio::io_context context;
  TextBatches batches;
  TokenBatcher<Prompt, std::string> batcher(
      context.get_executor(),
      {.inference_fn = answer(batches), .target_batch_tokens = 4096, .max_batch_size = 64,
       .batch_timeout = 5ms});
  batcher.start();
  run(context, [&]() -> asio::awaitable<void> {
    Prompt hello("Hello, world!");
    Prompt longer(std::string(40, 'x'));
    auto first = co_await batcher.submit(std::move(hello));
    auto second = co_await batcher.submit(std::move(longer));
    EXPECT_EQ(co_await first.get(), "answer: Hello, world!");
    EXPECT_EQ(co_await second.get(), "answer: " + std::string(40, 'x'));
    co_await batcher.stop();
  });
  EXPECT_EQ(batches, (TextBatches{{"Hello, world!", std::string(40, 'x')}}));
  EXPECT_EQ(batcher.stats().total_batch_cost, 4u + 11u);
}

TEST(TokenBatcher, RejectsMinBatchSizeAboveMax) {
  asio::io_context context;
  TextBatches batches;
  try {
    TokenBatcher<Prompt, std::string> batcher(
        context.get_executor(),
        {.inference_fn = answer(batches), .max_batch_size = 2, .min_batch_size = 3});
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "TokenBatcher: min_batch_size (3) exceeds max_batch_size (2)");
  }
}

TEST(TokenBatcher, SubmitWhenNotRunningNamesTheTokenBatcher) {
  asio::io_context context;
  TextBatches batches;
  TokenBatcher<Prompt, std::string> batcher(context.get_executor(),
                                            {.inference_fn = answer(batches)});
  run(context, [&]() -> asio::awaitable<void> {
    try {
      co_await batcher.submit(Prompt("x"));
      ADD_FAILURE() << "expected StateError";
    } catch (const StateError& e) {
      EXPECT_STREQ(e.what(), "TokenBatcher is not running");
    }
  });
}

}  // namespace
}  // namespace tensorstream
