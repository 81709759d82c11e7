// A streamer's chunk size and concurrency: explicit options, then the environment, then defaults.

#include <gtest/gtest.h>

#include "streaming/checkpoint_files.hpp"
#include "support/model_loader_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

class StreamerEnvironment : public ::testing::Test {
 protected:
  void SetUp() override { testing::write_checkpoint(file(), {{"x", 10000}}); }

  std::string file() const { return (dir_.path() / "model.safetensors").string(); }

  // Requests a stream of the 10000-byte tensor makes: the size and the header, then one per
  // chunk, which tells the chunk size the stream used.
  std::uint64_t requests(StreamerOptions options = {}) const {
    RawStreamer streamer(file(), options);
    while (streamer.next_blocking()) {
    }
    return streamer.stats().requests;
  }

  // The message of the InvalidArgument that constructing a streamer with `options` throws.
  std::string construction_error(StreamerOptions options = {}) const {
    try {
      RawStreamer streamer(file(), options);
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    ADD_FAILURE() << "expected InvalidArgument";
    return {};
  }

  testing::ModelLoaderEnvironment environment_;
  TempDir dir_;
};

TEST_F(StreamerEnvironment, ChunkSizeDefaultsTo16MiB) { EXPECT_EQ(requests(), 2u + 1u); }

TEST_F(StreamerEnvironment, FlyteChunkSizeIsUsedWhenNoOptionIsGiven) {
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "1000");
  EXPECT_EQ(requests(), 2u + 10u);
}

TEST_F(StreamerEnvironment, TensorstreamChunkSizeBeatsTheFlyteOne) {
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "1000");
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "5000");
  EXPECT_EQ(requests(), 2u + 2u);
}

TEST_F(StreamerEnvironment, AnExplicitChunkSizeBeatsTheEnvironment) {
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "1000");
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "5000");
  StreamerOptions options;
  options.chunk_size = 2500;
  EXPECT_EQ(requests(options), 2u + 4u);
}

TEST_F(StreamerEnvironment, AMalformedVariableFailsTheStreamerAtConstruction) {
  environment_.set("FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "many");
  EXPECT_EQ(construction_error(),
            "FLYTE_MODEL_LOADER_MAX_CONCURRENCY='many' is not a positive decimal integer");
}

TEST_F(StreamerEnvironment, AMalformedVariableFailsEvenWhereAnExplicitOptionOverridesIt) {
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "16XB");
  StreamerOptions options;
  options.chunk_size = 2500;
  EXPECT_EQ(construction_error(options),
            "TENSORSTREAM_CHUNK_SIZE='16XB' is not a positive size (e.g. 4096, 512KiB, 16MiB)");
}

TEST_F(StreamerEnvironment, AnExplicitZeroIsStillRejected) {
  environment_.set("TENSORSTREAM_MAX_CONCURRENCY", "4");
  StreamerOptions options;
  options.max_concurrency = 0;
  EXPECT_EQ(construction_error(options), "max_concurrency must be at least 1");
}

// A billion reads in flight would be a billion coroutines started before the first tensor.
TEST_F(StreamerEnvironment, AConcurrencyAboveTheLimitIsRejected) {
  StreamerOptions options;
  options.max_concurrency = 4097;
  EXPECT_EQ(construction_error(options), "max_concurrency 4097 is above the limit of 4096");
  environment_.set("FLYTE_MODEL_LOADER_MAX_CONCURRENCY", "1000000000");
  EXPECT_EQ(construction_error(StreamerOptions{}),
            "max_concurrency 1000000000 is above the limit of 4096");
}

// Tens of thousands of threads take minutes to start and stop, for nothing a few would not do.
TEST_F(StreamerEnvironment, IoThreadsAboveTheLimitAreRejected) {
  StreamerOptions options;
  options.io_threads = 1025;
  EXPECT_EQ(construction_error(options), "io_threads 1025 is above the limit of 1024");
}

}  // namespace
}  // namespace tensorstream
