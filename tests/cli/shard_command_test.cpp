// `tensorstream shard`: the rank files it writes are what `tensorstream stream --rank R --tp N`
// reads.

#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "cli/shape_json.hpp"
#include "support/process.hpp"
#include "support/sha256.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/partition_rules.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::ProcessResult;
using testing::run_cli;
using testing::TempDir;

class ShardCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(
        run_cli({"gen-model", source_.path().string(), "--preset", "tiny", "--shards", "2"}).exit_code,
        0);
  }

  TempDir source_;
  TempDir destination_;
};

TEST_F(ShardCommand, WritesRankFilesThatStreamWithRankAndTp) {
  const auto shard = run_cli({"shard", source_.path().string(), destination_.path().string(), "--tp",
                          "2", "--max-part-size", "1MiB"});
  ASSERT_EQ(shard.exit_code, 0) << shard.err;
  const auto specs = llama_tensors(synthetic_preset("tiny"));
  const std::regex summary(R"(sharded ([0-9]+) tensors \([0-9.]+ MiB\) from (.+) over 2 ranks )"
                           R"(into ([0-9]+) files \([0-9.]+ MiB\) in (.+) in [0-9.]+ s)");
  const auto lines = lines_of(shard.out);
  ASSERT_EQ(lines.size(), 1u) << shard.out;
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines[0], match, summary)) << lines[0];
  EXPECT_EQ(match[1], std::to_string(specs.size()));
  EXPECT_EQ(match[2], source_.path().string());
  EXPECT_GT(std::stoi(match[3]), 2) << "1 MiB parts split each rank's 2 MiB";
  EXPECT_EQ(match[4], destination_.path().string());

  const HeadConfig heads{.num_attention_heads = 8, .num_key_value_heads = 4, .head_dim = 32};
  const std::regex tensor_line(R"re(\{"name":"([^"]+)","dtype":"BF16","shape":(\[[0-9,]*\]),)re"
                               R"re("bytes":[0-9]+,"sha256":"([0-9a-f]{64})"\})re");
  for (int rank = 0; rank < 2; ++rank) {
    SCOPED_TRACE(rank);
    const auto stream = run_cli({"stream", destination_.path().string() + "/", "--rank",
                             std::to_string(rank), "--tp", "2", "--json", "--checksum", "sha256"});
    ASSERT_EQ(stream.exit_code, 0) << stream.err;
    const auto tensors = lines_of(stream.out);
    ASSERT_EQ(tensors.size(), specs.size() + 1);
    std::map<std::string, std::pair<std::string, std::string>> streamed;  // name → shape, sha256
    for (std::size_t i = 0; i + 1 < tensors.size(); ++i) {
      ASSERT_TRUE(std::regex_match(tensors[i], match, tensor_line)) << tensors[i];
      streamed[match[1]] = {match[2], match[3]};
    }
    for (const auto& spec : specs) {
      const auto partition = partition_tensor(spec, heads, 2, rank);
      const auto source = synthetic_bytes(spec.name, 0, tensor_byte_size(spec));
      std::vector<std::byte> expected(tensor_byte_size({spec.name, spec.dtype, partition.shape}));
      fill_partition_bytes(spec, partition, source, 0, expected);
      ASSERT_EQ(streamed.count(spec.name), 1u) << spec.name;
      EXPECT_EQ(streamed[spec.name].first, testing::shape_json(partition.shape)) << spec.name;
      EXPECT_EQ(streamed[spec.name].second, testing::sha256_hex(expected)) << spec.name;
    }
  }
}

// Streamed whole, rank files would be every rank's slices under the same names.
TEST_F(ShardCommand, JsonProgressAndOverwriteWorkAsForPartition) {
  const auto first = run_cli({"shard", source_.path().string(), destination_.path().string(),
                              "--tp", "2", "--json", "--progress", "always"});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::regex summary(R"re(\{"summary":\{"source":"(.+)","destination":"(.+)","tp":2,)re"
                           R"re("tensors":([0-9]+),"bytes_read":[0-9]+,"files":2,)re"
                           R"re("bytes_written":[0-9]+,"seconds":[0-9.]+\}\}\n)re");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(first.out, match, summary)) << first.out;
  EXPECT_EQ(match[1], source_.path().string());
  EXPECT_EQ(match[3], std::to_string(llama_tensors(synthetic_preset("tiny")).size()));
  const std::string tensors = std::to_string(llama_tensors(synthetic_preset("tiny")).size());
  EXPECT_NE(first.err.find(tensors + "/" + tensors + " tensors"), std::string::npos) << first.err;

  const auto again = run_cli({"shard", source_.path().string(), destination_.path().string(),
                              "--tp", "2"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_EQ(again.err, "tensorstream: error: " + destination_.path().string() +
                           " already holds rank files (e.g. model-rank-0-part-0.safetensors); "
                           "pass --overwrite to replace them\n");
  const auto overwritten = run_cli({"shard", source_.path().string(),
                                    destination_.path().string(), "--tp", "2", "--overwrite"});
  EXPECT_EQ(overwritten.exit_code, 0) << overwritten.err;
}

TEST_F(ShardCommand, RankFilesStreamedWithoutTpAreAUsageErrorThatSaysHowToChoose) {
  ASSERT_EQ(run_cli({"shard", source_.path().string(), destination_.path().string(), "--tp", "2"})
                .exit_code,
            0);
  const std::string prefix = destination_.path().string() + "/";
  for (const std::string command : {"stream", "inspect"}) {
    const auto refused = run_cli({command, prefix});
    EXPECT_EQ(refused.exit_code, 2) << command;
    EXPECT_EQ(refused.out, "") << command;
    EXPECT_EQ(refused.err, "tensorstream: error: " + prefix +
                               ": holds the rank files of TP 2 (model-rank-{r}-part-*.safetensors); "
                               "choose one with --tp 2 --rank R (StreamerOptions "
                               "tensor_parallel_size and rank)\n")
        << command;
  }
  EXPECT_EQ(run_cli({"stream", prefix, "--tp", "2", "--rank", "1"}).exit_code, 0);
}

TEST_F(ShardCommand, ATensorThatCannotBeSplitIsOneErrorLine) {
  const auto shard =
      run_cli({"shard", source_.path().string(), destination_.path().string(), "--tp", "3"});
  EXPECT_EQ(shard.exit_code, 2);
  EXPECT_EQ(lines_of(shard.err),
            std::vector<std::string>{"tensorstream: error: tensor \"model.embed_tokens.weight\": "
                                     "dim 0 of size 1024, padded to 1024, cannot be split evenly "
                                     "over 3 ranks"});
  EXPECT_TRUE(shard.out.empty());
}

}  // namespace
}  // namespace tensorstream
