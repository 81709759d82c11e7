// The model layouts over s3://: index rules, rank files and prefetch against a real S3 server.

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "storage/s3rver_test.hpp"
#include "streaming/synthetic_stream.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"
#include "tensorstream/transfer/prefetch.hpp"
#include "transfer/shard_checkpoint.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::read_file;
using testing::TempDir;
using testing::expect_whole_model;
using testing::small_chunks;

class S3Layout : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 3, .index = true});
  }

  void upload(const std::string& prefix) { s3rver_->put_directory("models", prefix, model_.path()); }

  TempDir model_;
};

TEST_F(S3Layout, AnUndecodableIndexFallsBackToEveryShard) {
  std::ofstream(model_.path() / "model.safetensors.index.json") << "{not json";
  upload("broken-index/");
  RawStreamer streamer("s3://models/broken-index/", small_chunks());
  expect_whole_model(streamer);
}

TEST_F(S3Layout, ATensorTheIndexListsButItsFileLacksIsAnError) {
  auto index = read_file(model_.path() / "model.safetensors.index.json");
  const auto map = index.find("\"weight_map\"");
  ASSERT_NE(map, std::string::npos);
  index.insert(index.find('{', map) + 1,
               "\"model.extra.weight\": \"model-00002-of-00003.safetensors\", ");
  std::ofstream(model_.path() / "model.safetensors.index.json") << index;
  upload("short/");
  RawStreamer streamer("s3://models/short/", small_chunks());
  try {
    streamer.next_blocking();
    FAIL() << "expected FormatError";
  } catch (const FormatError& error) {
    EXPECT_STREQ(error.what(),
                 "Missing 1 tensor at s3://models/short/model-00002-of-00003.safetensors: "
                 "model.extra.weight (listed in s3://models/short/model.safetensors.index.json)");
  }
}

TEST_F(S3Layout, RankFilesStreamTheSameBytesAsFromDisk) {
  TempDir ranks;
  shard_checkpoint(model_.path().string() + "/", ranks.path(), {.tensor_parallel_size = 2});
  s3rver_->put_directory("models", "ranks/", ranks.path());
  StreamerOptions options = small_chunks();
  options.tensor_parallel_size = 2;
  for (int rank = 0; rank < 2; ++rank) {
    options.rank = rank;
    const auto remote = testing::tensor_bytes("s3://models/ranks/", options);
    EXPECT_EQ(remote, testing::tensor_bytes(ranks.path().string() + "/", options))
        << "rank " << rank;
    EXPECT_EQ(remote.size(), llama_tensors(synthetic_preset("tiny")).size());
  }
  options.rank = 2;
  EXPECT_THROW(RawStreamer("s3://models/ranks/", options), InvalidArgument);
}

TEST_F(S3Layout, PrefetchCopiesNestedArtifactsButNoWeightsOrPlaceholders) {
  fs::create_directories(model_.path() / "tokenizer" / "extra");
  std::ofstream(model_.path() / "tokenizer" / "vocab.txt") << "a b c";
  std::ofstream(model_.path() / "tokenizer" / "extra" / "empty.txt");
  std::ofstream(model_.path() / "tokenizer" / "extra" / "nested.safetensors") << "weights";
  upload("llama/");
  s3rver_->put_placeholder("models", "llama/placeholder/");

  TempDir local;
  const auto result = prefetch_blocking("s3://models/llama/", local.path());
  const std::vector<std::string> expected{
      "config.json",        "generation_config.json",     "model.safetensors.index.json",
      "tokenizer.json",     "tokenizer/extra/empty.txt", "tokenizer/vocab.txt"};
  EXPECT_EQ(result.files, expected);
  EXPECT_EQ(read_file(local.path() / "tokenizer" / "vocab.txt"), "a b c");
  EXPECT_TRUE(fs::exists(local.path() / "tokenizer" / "extra" / "empty.txt"));
  EXPECT_EQ(fs::file_size(local.path() / "tokenizer" / "extra" / "empty.txt"), 0u);
  EXPECT_EQ(read_file(local.path() / "config.json"), read_file(model_.path() / "config.json"));
  EXPECT_FALSE(fs::exists(local.path() / "placeholder"));
}

}  // namespace
}  // namespace tensorstream
