// Whole streams from the Hub fixture over hf:// URLs: an index with shards, a single file, rank
// files of a TP layout and a TRAW tree, byte-exact; a branch that moves mid-stream and CDN URLs
// that expire mid-stream change nothing.

#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "storage/hf/hf_test_environment.hpp"
#include "streaming/synthetic_stream.hpp"
#include "streaming/traw_files.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"
#include "transfer/shard_checkpoint.hpp"

namespace tensorstream::hf_streaming_tests {

using testing::HubFixtureServer;
using testing::TempDir;
using testing::expect_whole_model;
using testing::small_chunks;

class HfStreaming : public hf::testing::HfEnvironmentTest {
 protected:
  explicit HfStreaming(HubFixtureServer::Options options = {})
      : HfEnvironmentTest(std::move(options)) {}

  // Generates a synthetic checkpoint and commits it as `repo`'s main.
  std::string commit_model(const std::string& repo, const SyntheticModelOptions& options) {
    TempDir dir;
    generate_synthetic_model(dir.path(), options);
    return hub_.commit_directory(repo, dir.path());
  }
};

TEST_F(HfStreaming, AShardedModelWithAnIndexStreamsByteExact) {
  commit_model("acme/tiny", {.preset = "tiny", .shards = 3, .index = true});
  RawStreamer streamer("hf://acme/tiny", small_chunks());
  expect_whole_model(streamer);
  EXPECT_EQ(streamer.stats().io_mode, "http");
  EXPECT_EQ(hub_.leaked_tokens(), 0);
  EXPECT_EQ(hub_requests("/api/models/acme/tiny/revision/").size(), 1u);
}

TEST_F(HfStreaming, ASingleFileAtACommitStreamsByteExact) {
  const std::string commit = commit_model("acme/tiny", {.preset = "tiny"});
  RawStreamer streamer("hf://acme/tiny@" + commit + "/model.safetensors", small_chunks());
  expect_whole_model(streamer);
}

TEST_F(HfStreaming, RankFilesOfATensorParallelLayoutStreamTheBytesOnDisk) {
  TempDir model;
  generate_synthetic_model(model.path(), {.preset = "tiny", .shards = 3, .index = true});
  TempDir ranks;
  shard_checkpoint(model.path().string() + "/", ranks.path(), {.tensor_parallel_size = 2});
  hub_.commit_directory("acme/ranks", ranks.path());
  StreamerOptions options = small_chunks();
  options.tensor_parallel_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    options.rank = rank;
    const auto remote = testing::tensor_bytes("hf://acme/ranks/", options);
    EXPECT_EQ(remote, testing::tensor_bytes(ranks.path().string() + "/", options))
        << "rank " << rank;
    EXPECT_FALSE(remote.empty());
  }
}

TEST_F(HfStreaming, ATrawTreeStreamsTheSelectedShardByteExact) {
  TempDir tree;
  testing::write_traw_tree(tree.path(), {1, 2});
  hub_.commit_directory("acme/raw", tree.path());
  for (const auto& [size, rank] : std::vector<std::pair<int, int>>{{1, 0}, {2, 0}, {2, 1}}) {
    SCOPED_TRACE("TP" + std::to_string(size) + " rank " + std::to_string(rank));
    RawStreamer streamer("hf://acme/raw", testing::partition_options(size, rank));
    testing::expect_traw_shard(streamer, testing::shard_offset(size, rank));
  }
}

TEST_F(HfStreaming, AMissingRepositoryFailsFastNamingIt) {
  try {
    RawStreamer streamer("hf://acme/none", small_chunks());
    streamer.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with("hf://acme/none@main: no such repository"))
        << error.what();
  }
}

class HfStreamingExpiringCdn : public HfStreaming {
 protected:
  HfStreamingExpiringCdn() : HfStreaming({.cdn_url_uses = 1}) {}
};

TEST_F(HfStreamingExpiringCdn, CdnUrlsExpiringAfterEveryRangeChangeNoByte) {
  commit_model("acme/tiny", {.preset = "tiny", .shards = 2, .index = true});
  RawStreamer streamer("hf://acme/tiny", small_chunks());
  expect_whole_model(streamer);
  EXPECT_GT(hub_requests("/acme/tiny/resolve/").size(), 4u);
}

// Every range resolves its file anew here, so ranges after the push ask the Hub again.
TEST_F(HfStreamingExpiringCdn, ABranchMovingMidStreamLeavesTheStreamOnItsCommit) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 3, .index = true});
  hub_.commit_directory("acme/tiny", dir.path());
  StreamerOptions options = small_chunks();
  // One tensor at a time, so that most are read after the push.
  options.max_concurrency = 1;
  options.memory_limit = 1;
  RawStreamer streamer("hf://acme/tiny", options);
  auto first = streamer.next_blocking();
  ASSERT_TRUE(first);
  // A push replaces every shard with one whose tensors differ in every byte.
  for (const auto& name : testing::files_under(dir.path())) {
    if (name.ends_with(".safetensors")) testing::invert_tensor_data(dir.path() / name);
  }
  hub_.commit_directory("acme/tiny", dir.path());
  std::set<std::string> names{first->info.name};
  while (auto tensor = streamer.next_blocking()) {
    const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    ASSERT_EQ(tensor->bytes().size(), expected.size());
    EXPECT_EQ(std::memcmp(tensor->bytes().data(), expected.data(), expected.size()), 0)
        << "bytes of the new commit in " << tensor->info.name;
    names.insert(tensor->info.name);
  }
  EXPECT_GT(names.size(), 3u);
  EXPECT_EQ(hub_requests("/api/models/acme/tiny/revision/").size(), 1u);
}

}  // namespace tensorstream::hf_streaming_tests
