// A stream on a service's own executor: no thread of its own, every read on the service's
// thread, destruction from inside the service without blocking it, and inspection awaited there.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_future.hpp>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>

#include "streaming/forwarding_store.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
using testing::TempDir;

// A FileStore recording the threads its calls run on.
class ThreadRecordingStore final : public testing::ForwardingStore {
 public:
  ThreadRecordingStore(asio::any_io_executor executor, std::set<std::thread::id>& threads,
                       std::mutex& mutex)
      : ForwardingStore(std::move(executor)), threads_(threads), mutex_(mutex) {}

  asio::awaitable<std::uint64_t> size(std::string key) override {
    record();
    return inner_.size(std::move(key));
  }
  asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                   std::span<std::byte> destination) override {
    record();
    return inner_.read_range(std::move(key), offset, destination);
  }

 private:
  void record() {
    std::lock_guard lock(mutex_);
    threads_.insert(std::this_thread::get_id());
  }

  std::set<std::thread::id>& threads_;
  std::mutex& mutex_;
};

class ServiceExecutor : public ::testing::Test {
 protected:
  void SetUp() override { generate_synthetic_model(dir_.path(), {.preset = "tiny", .shards = 2}); }

  StreamerOptions options() const {
    StreamerOptions options;
    options.chunk_size = 64 * 1024;
    options.max_concurrency = 8;
    return options;
  }

  TempDir dir_;
  asio::io_context service_;
};

TEST_F(ServiceExecutor, EveryReadAndEveryTensorIsOnTheServicesThread) {
  std::set<std::thread::id> store_threads;
  std::mutex mutex;
  RawStreamer streamer(service_.get_executor(), dir_.path().string() + "/", options(),
                       [&](const Url&, asio::any_io_executor executor) {
                         return std::make_unique<ThreadRecordingStore>(std::move(executor),
                                                                       store_threads, mutex);
                       });
  std::set<std::thread::id> consumer_threads;
  std::size_t count = 0;
  auto done = asio::co_spawn(
      service_,
      [&]() -> asio::awaitable<void> {
        while (auto tensor = co_await streamer.next()) {
          const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
          EXPECT_TRUE(expected.empty() ||
                      std::memcmp(tensor->bytes().data(), expected.data(), expected.size()) == 0)
              << tensor->info.name;
          consumer_threads.insert(std::this_thread::get_id());
          ++count;
        }
      },
      asio::use_future);
  service_.run();
  done.get();
  EXPECT_EQ(count, llama_tensors(synthetic_preset("tiny")).size());
  EXPECT_EQ(store_threads, std::set<std::thread::id>{std::this_thread::get_id()});
  EXPECT_EQ(consumer_threads, std::set<std::thread::id>{std::this_thread::get_id()});
}

// The service's only thread destroys the streamer mid-stream: destruction must not wait for
// work that needs that very thread, and the cancelled work winds down so that run() returns.
TEST_F(ServiceExecutor, DestroyingTheStreamerOnTheServicesThreadDoesNotBlockIt) {
  std::size_t taken = 0;
  auto done = asio::co_spawn(
      service_,
      [&]() -> asio::awaitable<void> {
        StreamerOptions small = options();
        small.chunk_size = 4096;
        small.max_concurrency = 2;
        RawStreamer streamer(co_await asio::this_coro::executor, dir_.path().string() + "/", small);
        if (auto tensor = co_await streamer.next()) ++taken;
      },
      asio::use_future);
  service_.run();
  done.get();
  EXPECT_EQ(taken, 1u);
}

TEST_F(ServiceExecutor, KeptTensorsOutliveAStreamThatEndedOnTheService) {
  std::vector<StreamedTensor> kept;
  {
    RawStreamer streamer(service_.get_executor(), dir_.path().string() + "/", options());
    auto done = asio::co_spawn(
        service_,
        [&]() -> asio::awaitable<void> {
          while (auto tensor = co_await streamer.next()) kept.push_back(std::move(*tensor));
        },
        asio::use_future);
    service_.run();
    done.get();
  }
  service_.restart();
  service_.run();
  ASSERT_EQ(kept.size(), llama_tensors(synthetic_preset("tiny")).size());
  for (const auto& tensor : kept) {
    const auto expected = synthetic_bytes(tensor.info.name, 0, tensor.info.byte_size());
    EXPECT_TRUE(expected.empty() ||
                std::memcmp(tensor.bytes().data(), expected.data(), expected.size()) == 0)
        << tensor.info.name;
  }
}

TEST_F(ServiceExecutor, AsyncInspectGivesWhatInspectGives) {
  const std::string url = dir_.path().string() + "/";
  auto awaited = asio::co_spawn(service_, async_inspect(url), asio::use_future);
  service_.run();
  const auto headers = awaited.get();
  const auto blocking = inspect(url);
  ASSERT_EQ(headers.size(), blocking.size());
  for (std::size_t i = 0; i < headers.size(); ++i) {
    EXPECT_EQ(headers[i].url, blocking[i].url);
    EXPECT_EQ(headers[i].size, blocking[i].size);
    EXPECT_EQ(headers[i].header.tensors.size(), blocking[i].header.tensors.size());
  }
}

TEST_F(ServiceExecutor, AsyncInspectOfAMissingObjectThrowsItsError) {
  auto awaited = asio::co_spawn(
      service_, async_inspect(dir_.path().string() + "/absent.safetensors"), asio::use_future);
  service_.run();
  EXPECT_THROW(awaited.get(), NotFoundError);
}

}  // namespace
}  // namespace tensorstream
