// `stream` and `inspect` of TRAW sources: a model prefix with --tp and --rank, a shard prefix, a
// single object, and the error lines of a prefix that does not hold what was asked for.

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "cli/shape_json.hpp"
#include "streaming/traw_files.hpp"
#include "support/process.hpp"
#include "support/sha256.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::run_cli;
using testing::sha256_hex;
using testing::shape_json;
using testing::shard_offset;
using testing::TempDir;

class TrawCli : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_traw_tree(dir_.path(), {1, 2});
    for (auto& spec : llama_tensors(synthetic_preset("tiny"))) specs_.emplace(spec.name, spec);
  }

  std::string prefix() const { return dir_.path().string() + "/"; }

  TempDir dir_;
  std::map<std::string, TensorSpec> specs_;
};

TEST_F(TrawCli, StreamJsonOfAModelPrefixGivesTheRanksExactTensors) {
  const auto result = run_cli({"stream", "file://" + prefix(), "--tp", "2", "--rank", "1", "--json",
                               "--checksum", "sha256", "--chunk-size", "64KiB"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), specs_.size() + 1);
  // Each line exactly, in any order: tensors come as they complete.
  std::multiset<std::string> expected;
  for (const auto& [name, spec] : specs_) {
    const auto bytes = testing::byte_size_of(spec);
    const auto digest = sha256_hex(synthetic_bytes(name, shard_offset(2, 1), bytes));
    expected.insert(R"({"name":")" + name + R"(","dtype":"BF16","shape":)" +
                    shape_json(spec.shape) + R"(,"bytes":)" + std::to_string(bytes) +
                    R"(,"sha256":")" + digest + R"("})");
  }
  EXPECT_EQ(std::multiset<std::string>(lines.begin(), lines.end() - 1), expected);
  EXPECT_EQ(lines.back().rfind("{\"summary\":{\"tensors\":" + std::to_string(specs_.size()), 0), 0u)
      << lines.back();
  EXPECT_NE(lines.back().find(",\"partition\":\"TP2/shard1\""), std::string::npos)
      << lines.back();
}

TEST_F(TrawCli, TheSummaryOfARankNamesItsPartition) {
  const auto result = run_cli({"stream", prefix(), "--tp", "2", "--rank", "1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find(") of TP2/shard1 from " + prefix() + " in "), std::string::npos)
      << result.out;
}

TEST_F(TrawCli, StreamOfAShardPrefixPrintsOneSummaryLine) {
  const auto result = run_cli({"stream", prefix() + "TP2/shard0/"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 1u) << result.out;
  EXPECT_EQ(lines[0].rfind("streamed " + std::to_string(specs_.size()) + " tensors", 0), 0u)
      << lines[0];
}

TEST_F(TrawCli, InspectJsonOfAShardListsEveryTensor) {
  const auto result = run_cli({"inspect", prefix(), "--tp", "1", "--rank", "0", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\"total_tensors\":" + std::to_string(specs_.size())),
            std::string::npos)
      << result.out;
  const std::string norm = prefix() + "TP1/shard0/model.norm.weight.bin";
  EXPECT_NE(
      result.out.find(
          R"({"url":")" + norm +
          R"(","size":544,"data_start":32,"metadata":{},"tensors":[{"name":"model.norm.weight","dtype":"BF16","shape":[256],"data_offsets":[0,512],"bytes":512}]})"),
      std::string::npos)
      << result.out;
}

TEST_F(TrawCli, InspectTableOfASingleObject) {
  const std::string object = prefix() + "TP2/shard1/model.embed_tokens.weight.bin";
  const auto result = run_cli({"inspect", object});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 3u) << result.out;
  EXPECT_EQ(lines[0], object + " (512.0 KiB, 1 tensor, data at byte 40)");
  EXPECT_NE(lines[1].find("model.embed_tokens.weight"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("[1024,256]"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2].rfind("total: 1 tensor, 512.0 KiB in 1 file", 0), 0u) << lines[2];
}

TEST_F(TrawCli, AModelPrefixWithoutTpIsAUsageErrorListingTheSizes) {
  for (const std::string command : {"stream", "inspect"}) {
    const auto result = run_cli({command, prefix()});
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_EQ(result.err, "tensorstream: error: " + prefix() +
                              ": holds TRAW partitions (TP sizes present: 1, 2); choose one with "
                              "--tp N --rank R (StreamerOptions tensor_parallel_size and rank), "
                              "or name a shard's prefix\n")
        << command;
    EXPECT_TRUE(result.out.empty()) << command;
  }
}

TEST_F(TrawCli, ATpThatWasNotWrittenIsAnErrorListingTheSizes) {
  for (const std::string command : {"stream", "inspect"}) {
    const auto result = run_cli({command, prefix(), "--tp", "8", "--rank", "0"});
    EXPECT_EQ(result.exit_code, 1) << command;
    EXPECT_EQ(result.err,
              "tensorstream: error: " + prefix() + ": no TP8 partition; TP sizes present: 1, 2\n")
        << command;
  }
}

}  // namespace
}  // namespace tensorstream
