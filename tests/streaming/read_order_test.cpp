// ReadOrder::file_order: a consumer that uses tensors strictly in file order, keeping the ones that
// arrive early until their predecessors are in, never stalls the memory budget.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

constexpr std::int64_t kib = 1024;

// Streams `url` and hands every tensor on in file order (`order`, the names), holding the ones
// that come early; checks each one's bytes as it is handed on. Returns the names handed on.
std::vector<std::string> consume_in_file_order(const std::string& url,
                                               const std::vector<std::string>& order,
                                               const StreamerOptions& options) {
  RawStreamer streamer(url, options);
  std::map<std::size_t, StreamedTensor> early;
  std::vector<std::string> handed_on;
  while (auto tensor = streamer.next_blocking()) {
    const auto index = static_cast<std::size_t>(
        std::find(order.begin(), order.end(), tensor->info.name) - order.begin());
    early.emplace(index, std::move(*tensor));
    for (auto it = early.begin(); it != early.end() && it->first == handed_on.size();
         it = early.erase(it)) {
      const auto& info = it->second.info;
      const auto expected = synthetic_bytes(info.name, 0, info.byte_size());
      EXPECT_TRUE(std::equal(expected.begin(), expected.end(), it->second.bytes().begin(),
                             it->second.bytes().end()))
          << info.name;
      handed_on.push_back(info.name);
    }
  }
  return handed_on;
}

class ReadOrderTest : public ::testing::Test {
 protected:
  // Two files whose large tensors come first, so that smallest-first reads them last: "a" holds
  // a 700 KiB tensor, larger than the memory limit, then ten of 100 KiB; "b" five of 100 KiB and
  // one of 300 KiB.
  void SetUp() override {
    write("a.safetensors", "a", 700 * kib, 10);
    write("b.safetensors", "b", 300 * kib, 5);
    order_ = {"a.big"};
    for (int i = 0; i < 10; ++i) order_.push_back("a." + std::to_string(i));
    for (int i = 0; i < 5; ++i) order_.push_back("b." + std::to_string(i));
    order_.push_back("b.big");
    options_.chunk_size = 64 * kib;
    options_.max_concurrency = 8;
    options_.memory_limit = 512 * kib;
  }

  void write(const std::string& file, const std::string& prefix, std::int64_t big, int small) {
    std::vector<TensorSpec> specs;
    if (prefix == "a") specs.push_back({prefix + ".big", Dtype::U8, {big}});
    for (int i = 0; i < small; ++i) {
      specs.push_back({prefix + "." + std::to_string(i), Dtype::U8, {100 * kib}});
    }
    if (prefix == "b") specs.push_back({prefix + ".big", Dtype::U8, {big}});
    write_safetensors(dir_.path() / file, specs,
                      [](const TensorSpec& spec, std::uint64_t offset, std::span<std::byte> out) {
                        fill_synthetic_bytes(spec.name, offset, out);
                      });
  }

  TempDir dir_;
  std::vector<std::string> order_;
  StreamerOptions options_;
};

TEST_F(ReadOrderTest, AReorderingConsumerCompletesByteExactWithinASmallMemoryLimit) {
  options_.read_order = ReadOrder::file_order;
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(consume_in_file_order(dir_.path().string() + "/", order_, options_), order_)
        << "round " << round;
  }
}

// The same consumer under the default order holds the five small tensors that fit the limit
// while waiting for "a.big", which is planned last: with kept tensors counted, the stream reports
// the stall.
TEST_F(ReadOrderTest, SmallestFirstStallsTheSameConsumerWhenKeptTensorsCount) {
  options_.memory_accounting = MemoryAccounting::until_released;
  try {
    consume_in_file_order(dir_.path().string() + "/", order_, options_);
    FAIL() << "no stall";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()),
              "streaming " + dir_.path().string() +
                  "/ cannot continue: memory_limit of 512.0 KiB is held by 500.0 KiB of yielded "
                  "tensors that are still alive; release tensors after use or raise memory_limit");
  }
}

// Counting only what the stream holds, the same consumer completes in either order.
TEST_F(ReadOrderTest, SmallestFirstCompletesTheSameConsumerByDefault) {
  EXPECT_EQ(consume_in_file_order(dir_.path().string() + "/", order_, options_), order_);
}

}  // namespace
}  // namespace tensorstream
