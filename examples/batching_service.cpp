// A small async inference service: concurrent clients submit prompts one at a time, and a
// TokenBatcher groups them into token-budgeted batches so that each batch costs one libtorch
// forward pass instead of one per prompt.
//
//   ./example_batching_service [clients]
//
// The "model" is a toy classifier: byte-frequency features into one Linear layer with fixed
// weights, so the classes mean nothing but are deterministic. What matters is the service around
// it.

#include "tensorstream/batching/prompt.hpp"
#include "tensorstream/batching/token_batcher.hpp"

#include <torch/nn/modules/linear.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace asio = boost::asio;
using tensorstream::Prompt;
using tensorstream::TokenBatcher;

constexpr std::int64_t feature_count = 128;
constexpr std::int64_t class_count = 4;

struct Reply {
  std::int64_t label = 0;
  float confidence = 0;
};

class Classifier {
 public:
  Classifier() : layer_(feature_count, class_count) {
    torch::NoGradGuard no_grad;
    const auto weights = torch::sin(torch::arange(feature_count * class_count) * 1.3) * 8.0;
    layer_->weight.copy_(weights.reshape({class_count, feature_count}));
    layer_->bias.zero_();
  }

  // One forward pass for the whole batch.
  std::vector<Reply> operator()(const std::vector<Prompt>& batch) {
    torch::NoGradGuard no_grad;
    const auto rows = static_cast<std::int64_t>(batch.size());
    auto features = torch::zeros({rows, feature_count});
    auto cells = features.accessor<float, 2>();
    for (std::int64_t row = 0; row < rows; ++row) {
      for (const unsigned char byte : batch[static_cast<std::size_t>(row)].text) {
        cells[row][byte % feature_count] += 1.0f;
      }
    }
    features = features / (features.sum(1, true) + 1.0f);
    const auto probabilities = torch::softmax(layer_->forward(features), 1);
    const auto [confidence, index] = probabilities.max(1);
    std::vector<Reply> replies;
    for (std::int64_t row = 0; row < rows; ++row) {
      replies.push_back({index[row].item<std::int64_t>(), confidence[row].item<float>()});
    }
    return replies;
  }

 private:
  torch::nn::Linear layer_;
};

const std::array<const char*, 8> sample_prompts{
    "What time does the store open tomorrow?",
    "Please summarize the attached report in three sentences.",
    "Hello there!",
    "The shipment arrived two days late.",
    "How do I reset my password?",
    "Translate 'good morning' into French, please.",
    "Good evening, team.",
    "Our build takes eleven minutes on a cold cache.",
};

}  // namespace

int main(int argc, char** argv) {
  int clients = 24;
  if (argc > 1) {
    const std::string_view text(argv[1]);
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), clients);
    if (ec != std::errc{} || end != text.data() + text.size() || clients < 1) {
      std::fprintf(stderr, "example_batching_service: error: '%s' is not a number of clients\n",
                   argv[1]);
      return 2;
    }
  }
  asio::io_context context;
  Classifier model;

  TokenBatcher<Prompt, Reply> batcher(
      context.get_executor(),
      {.inference_fn = [&](std::vector<Prompt> batch) -> asio::awaitable<std::vector<Reply>> {
         std::printf("forward pass over %zu prompts\n", batch.size());
         co_return model(batch);
       },
       .target_batch_tokens = 64,
       .max_batch_size = 16,
       .batch_timeout = std::chrono::milliseconds(5)});

  // One client: arrives after a staggered delay, submits its prompt, awaits the reply.
  auto client = [&](int id) -> asio::awaitable<void> {
    asio::steady_timer arrival(context, std::chrono::microseconds(500 * id));
    co_await arrival.async_wait(asio::use_awaitable);
    Prompt prompt(sample_prompts[static_cast<std::size_t>(id) % sample_prompts.size()]);
    const std::string text = prompt.text;
    auto future = co_await batcher.submit(std::move(prompt));
    const Reply reply = co_await future.get();
    std::printf("client %2d: %-58s -> class %lld (p=%.2f)\n", id, ("\"" + text + "\"").c_str(),
                static_cast<long long>(reply.label), static_cast<double>(reply.confidence));
  };

  int exit_code = 0;
  asio::co_spawn(
      context,
      [&]() -> asio::awaitable<void> {
        co_await batcher.run([&]() -> asio::awaitable<void> {
          int remaining = clients;
          asio::steady_timer all_replied(context, asio::steady_timer::time_point::max());
          for (int id = 0; id < clients; ++id) {
            asio::co_spawn(context, client(id), [&, id](std::exception_ptr error) {
              if (error) {
                try {
                  std::rethrow_exception(error);
                } catch (const std::exception& e) {
                  std::fprintf(stderr, "example_batching_service: error: client %d: %s\n", id,
                               e.what());
                }
                exit_code = 1;
              }
              if (--remaining == 0) {
                all_replied.cancel();
              }
            });
          }
          co_await all_replied.async_wait(asio::as_tuple(asio::use_awaitable));
        });
      },
      [&](std::exception_ptr error) {
        if (!error) {
          return;
        }
        try {
          std::rethrow_exception(error);
        } catch (const std::exception& e) {
          std::fprintf(stderr, "example_batching_service: error: %s\n", e.what());
          exit_code = 1;
        }
      });
  context.run();

  const auto stats = batcher.stats();
  std::printf(
      "\n%llu prompts, %llu forward passes: %.1f prompts and %.1f tokens per pass, "
      "queue wait p50 %.2f ms, p99 %.2f ms, utilization %.0f%%\n",
      static_cast<unsigned long long>(stats.total_completed),
      static_cast<unsigned long long>(stats.total_batches), stats.avg_batch_size,
      stats.avg_batch_cost, stats.queue_wait_p50_s * 1e3, stats.queue_wait_p99_s * 1e3,
      stats.utilization() * 100);
  return exit_code;
}
