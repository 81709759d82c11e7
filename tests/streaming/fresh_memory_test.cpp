// What a stream maps afresh: about its memory limit when the consumer releases tensors as it
// goes (their pages are recycled), the model's size when it keeps them all.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "streaming/checkpoint_files.hpp"
#include "support/temp_dir.hpp"
#include "support/units.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::MiB;

// 48 tensors of 1 to 3 MiB, 96 MiB in all, in one file.
std::string write_model(const testing::TempDir& dir) {
  std::vector<std::pair<std::string, std::uint64_t>> tensors;
  for (int i = 0; i < 48; ++i) {
    tensors.emplace_back("layer." + std::to_string(i), (1 + i % 3) * MiB);
  }
  const auto path = dir.path() / "model.safetensors";
  testing::write_checkpoint(path, tensors);
  return path.string();
}

StreamerOptions options() {
  StreamerOptions options;
  options.memory_limit = 16 * MiB;
  options.chunk_size = 1 * MiB;
  options.max_concurrency = 4;
  options.io_threads = 1;
  return options;
}

TEST(FreshMemory, AConsumerThatReleasesTensorsKeepsItNearTheLimit) {
  testing::TempDir dir;
  RawStreamer streamer(write_model(dir), options());
  std::uint64_t bytes = 0;
  while (auto tensor = streamer.next_blocking()) {
    ASSERT_EQ(tensor->bytes().front(), std::byte{7});
    bytes += tensor->info.byte_size();
  }
  const StreamStats stats = streamer.stats();
  EXPECT_EQ(bytes, 96 * MiB);
  // The limit, the tensor the consumer holds while the stream fills the limit again, and the
  // largest tensor's worth of pages the recycled ones may fall short by.
  EXPECT_LE(stats.fresh_memory, 16 * MiB + 3 * MiB + 3 * MiB) << stats.fresh_memory;
  EXPECT_GE(stats.fresh_memory, 3 * MiB);
}

TEST(FreshMemory, AConsumerThatKeepsEveryTensorPaysTheModelsSizeOnce) {
  testing::TempDir dir;
  RawStreamer streamer(write_model(dir), options());
  std::vector<StreamedTensor> kept;
  while (auto tensor = streamer.next_blocking()) kept.push_back(std::move(*tensor));
  EXPECT_EQ(kept.size(), 48u);
  EXPECT_EQ(streamer.stats().fresh_memory, 96 * MiB);
}

}  // namespace
}  // namespace tensorstream
