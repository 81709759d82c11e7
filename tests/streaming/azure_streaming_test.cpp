// Whole streams from Azurite over az:// URLs and blob endpoint URLs: a single file, an index, rank
// files of a TP layout and a TRAW tree, byte-exact, also through a fifth of the reads failing.

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "storage/azurite_test.hpp"
#include "streaming/synthetic_stream.hpp"
#include "streaming/traw_files.hpp"
#include "support/fault_proxy.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"
#include "transfer/shard_checkpoint.hpp"

namespace tensorstream::azure_streaming_tests {

using testing::TempDir;
using testing::expect_whole_model;
using testing::small_chunks;

class AzureStreaming : public azure::testing::AzuriteTest {
 protected:
  void SetUp() override {
    AzuriteTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    set("AZURE_STORAGE_CONNECTION_STRING", azurite().connection_string());
  }

  // Generates a synthetic checkpoint and uploads it under `prefix` of the test's container.
  void upload(const std::string& prefix, const SyntheticModelOptions& options) {
    TempDir dir;
    generate_synthetic_model(dir.path(), options);
    azurite().put_directory(container(), prefix, dir.path());
  }

  std::string url(const std::string& path) const { return "az://" + container() + "/" + path; }
};

TEST_F(AzureStreaming, ASingleFileStreamsByteExact) {
  upload("single/", {.preset = "tiny"});
  RawStreamer streamer(url("single/model.safetensors"), small_chunks());
  expect_whole_model(streamer);
  EXPECT_EQ(streamer.stats().io_mode, "http");
  EXPECT_EQ(streamer.stats().retries, 0u);
}

TEST_F(AzureStreaming, BlobsAreReadInTheStoresPreferredRangesUnlessTheChunkSizeIsChosen) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  azurite().put_directory(container(), "single/", dir.path());
  RawStreamer defaults(url("single/model.safetensors"), StreamerOptions{});
  expect_whole_model(defaults);
  EXPECT_EQ(defaults.stats().chunk_size, std::uint64_t{64} << 20);

  RawStreamer chosen(url("single/model.safetensors"), small_chunks());
  EXPECT_EQ(chosen.stats().chunk_size, 100'000u);
  set("TENSORSTREAM_CHUNK_SIZE", "1MiB");
  RawStreamer from_environment(url("single/model.safetensors"), StreamerOptions{});
  EXPECT_EQ(from_environment.stats().chunk_size, std::uint64_t{1} << 20);
  unset("TENSORSTREAM_CHUNK_SIZE");
  // Files have no preference: the default stays.
  RawStreamer local(dir.path().string() + "/model.safetensors", StreamerOptions{});
  EXPECT_EQ(local.stats().chunk_size, default_chunk_size);
}

TEST_F(AzureStreaming, AShardedModelWithAnIndexUnderAPrefixStreamsByteExact) {
  upload("sharded/", {.preset = "tiny", .shards = 3, .index = true});
  RawStreamer streamer(url("sharded/"), small_chunks());
  expect_whole_model(streamer);
}

TEST_F(AzureStreaming, BlobEndpointUrlsStreamAsAzUrlsDo) {
  upload("single/", {.preset = "tiny"});
  const std::string blob =
      azurite().blob_endpoint() + "/" + container() + "/single/model.safetensors";
  RawStreamer streamer(blob, small_chunks());
  expect_whole_model(streamer);
  RawStreamer prefix(azurite().blob_endpoint() + "/" + container() + "/single/", small_chunks());
  expect_whole_model(prefix);
}

TEST_F(AzureStreaming, RankFilesOfATensorParallelLayoutStreamTheBytesOnDisk) {
  TempDir model;
  generate_synthetic_model(model.path(), {.preset = "tiny", .shards = 3, .index = true});
  TempDir ranks;
  shard_checkpoint(model.path().string() + "/", ranks.path(), {.tensor_parallel_size = 2});
  azurite().put_directory(container(), "ranks/", ranks.path());
  StreamerOptions options = small_chunks();
  options.tensor_parallel_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    options.rank = rank;
    const auto remote = testing::tensor_bytes(url("ranks/"), options);
    EXPECT_EQ(remote, testing::tensor_bytes(ranks.path().string() + "/", options))
        << "rank " << rank;
    EXPECT_FALSE(remote.empty());
  }
}

TEST_F(AzureStreaming, ATrawTreeStreamsTheSelectedShardByteExact) {
  TempDir tree;
  testing::write_traw_tree(tree.path(), {1, 2});
  azurite().put_directory(container(), "raw/base/tiny/", tree.path());
  for (const auto& [size, rank] : std::vector<std::pair<int, int>>{{1, 0}, {2, 0}, {2, 1}}) {
    SCOPED_TRACE("TP" + std::to_string(size) + " rank " + std::to_string(rank));
    RawStreamer streamer(url("raw/base/tiny/"), testing::partition_options(size, rank));
    testing::expect_traw_shard(streamer, testing::shard_offset(size, rank));
  }
}

TEST_F(AzureStreaming, AMissingBlobFailsFastNamingIt) {
  try {
    RawStreamer streamer(url("none/model.safetensors"), small_chunks());
    streamer.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()).rfind(url("none/model.safetensors") + ": BlobNotFound", 0),
              0u)
        << error.what();
  }
}

TEST_F(AzureStreaming, StreamsStayByteExactWhenAFifthOfTheReadsFail) {
  upload("sharded/", {.preset = "tiny", .shards = 3, .index = true});
  for (int round = 0; round < 10; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    testing::FaultProxy proxy(azurite().port(),
                              {.mix_rate = 0.2,
                               .stall_for = std::chrono::milliseconds(300),
                               .seed = static_cast<std::uint64_t>(round + 1)});
    StreamerOptions options = small_chunks();
    options.store.azure().endpoint =
        proxy.endpoint() + "/" + testing::AzuriteServer::account_name;
    options.store.http().retry_base_delay = std::chrono::milliseconds(1);
    options.store.http().retry_max_delay = std::chrono::milliseconds(5);
    options.store.http().response_timeout = std::chrono::milliseconds(200);
    options.store.http().max_retries = 10;
    RawStreamer streamer(url("sharded/"), options);
    expect_whole_model(streamer);
    EXPECT_GT(proxy.injected(), 0);
  }
}

}  // namespace tensorstream::azure_streaming_tests
