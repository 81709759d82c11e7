// TRAW trees in the seed's S3 layout, raw/<base>/<model>/TP{n}/shard{r}/<tensor>.bin, streamed
// from a real S3 server (s3rver).

#include <gtest/gtest.h>

#include "storage/s3rver_test.hpp"
#include "streaming/checkpoint_files.hpp"
#include "streaming/traw_files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::expect_traw_shard;
using testing::partition_options;
using testing::shard_offset;
using testing::stream_error;
using testing::TempDir;

const std::string model = "s3://models/raw/base/tiny/";

class S3TrawStreaming : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    TempDir dir;
    testing::write_traw_tree(dir.path(), {1, 2});
    s3rver_->put_directory("models", "raw/base/tiny/", dir.path());
  }
};

TEST_F(S3TrawStreaming, AModelPrefixStreamsTheSelectedShardByteExact) {
  // Placeholders that consoles create are neither partitions nor objects.
  s3rver_->put_placeholder("models", "raw/base/tiny/TP2/");
  for (const auto& [size, rank] : std::vector<std::pair<int, int>>{{1, 0}, {2, 0}, {2, 1}}) {
    SCOPED_TRACE("TP" + std::to_string(size) + " rank " + std::to_string(rank));
    RawStreamer streamer(model, partition_options(size, rank));
    expect_traw_shard(streamer, shard_offset(size, rank));
    EXPECT_EQ(streamer.stats().io_mode, "http");
  }
}

TEST_F(S3TrawStreaming, AShardPrefixStreamsWithOrWithoutItsSlash) {
  for (const auto& url : {model + "TP2/shard1/", model + "TP2/shard1"}) {
    SCOPED_TRACE(url);
    RawStreamer streamer(url, partition_options(2, 1));
    expect_traw_shard(streamer, shard_offset(2, 1));
  }
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  RawStreamer streamer(model + "TP2/shard0/", options);
  expect_traw_shard(streamer, shard_offset(2, 0));
}

TEST_F(S3TrawStreaming, ASingleObjectStreamsByteExact) {
  testing::expect_traw_object(model + "TP2/shard1/model.layers.1.mlp.down_proj.weight.bin",
                              "model.layers.1.mlp.down_proj.weight", shard_offset(2, 1));
}

TEST_F(S3TrawStreaming, MemoryStaysWithinASmallLimit) {
  StreamerOptions options = partition_options(2, 1);
  options.memory_limit = 1 << 20;
  RawStreamer streamer(model, options);
  expect_traw_shard(streamer, shard_offset(2, 1));
  EXPECT_LE(streamer.stats().peak_memory, options.memory_limit);
  EXPECT_GT(streamer.stats().peak_memory, 0u);
}

TEST_F(S3TrawStreaming, InspectListsThePartitionsObjects) {
  const auto files = inspect(model, partition_options(2, 0));
  ASSERT_EQ(files.size(), llama_tensors(synthetic_preset("tiny")).size());
  for (const auto& file : files) {
    ASSERT_EQ(file.header.tensors.size(), 1u);
    EXPECT_EQ(file.url, model + "TP2/shard0/" + file.header.tensors[0].name + ".bin");
  }
}

TEST_F(S3TrawStreaming, PartitionsNotWrittenAreErrorsListingWhatExists) {
  EXPECT_EQ(stream_error<NotFoundError>(model, partition_options(8, 0)),
            model + ": no TP8 partition; TP sizes present: 1, 2");
  EXPECT_EQ(stream_error<InvalidArgument>(model, {}),
            model +
                ": holds TRAW partitions (TP sizes present: 1, 2); choose one with --tp N --rank R "
                "(StreamerOptions tensor_parallel_size and rank), or name a shard's prefix");
}

TEST_F(S3TrawStreaming, APrefixHoldingBothLayoutsIsAnError) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  s3rver_->put_directory("models", "raw/base/tiny/", dir.path());
  EXPECT_EQ(stream_error<InvalidArgument>(model, partition_options(2, 0)),
            model +
                ": holds both a safetensors checkpoint (model.safetensors) and TRAW partitions "
                "(TP sizes present: 1, 2); name the file, the index or a shard's prefix "
                "TP{n}/shard{r}/");
  // Named directly, each layout still streams.
  RawStreamer shard(model + "TP1/shard0/", partition_options(1, 0));
  expect_traw_shard(shard, shard_offset(1, 0));
}

}  // namespace
}  // namespace tensorstream
