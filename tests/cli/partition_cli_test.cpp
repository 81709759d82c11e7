// `tensorstream partition`: what a user sees, and that what it writes streams back.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::TempDir;

class PartitionCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_cli({"gen-model", model().string(), "--preset", "tiny"}).exit_code, 0);
  }

  fs::path model() const { return dir_.path() / "model"; }
  fs::path raw() const { return dir_.path() / "raw"; }

  TempDir dir_;
};

TEST_F(PartitionCli, PrintsASummaryAndTheTreeStreamsBackRankByRank) {
  const auto result = run_cli({"partition", model().string(), raw().string(), "--tp", "1,2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const std::regex summary(
      "partitioned 21 tensors \\(3\\.8 MiB\\) from " + model().string() +
      " for TP 1,2 into 63 traw objects \\(7\\.5 MiB\\) and 3 other files in " + raw().string() +
      " in [0-9]+\\.[0-9]{3} s\n");
  EXPECT_TRUE(std::regex_match(result.out, summary)) << result.out;

  const auto rank = run_cli({"stream", raw().string(), "--tp", "2", "--rank", "1", "--json"});
  ASSERT_EQ(rank.exit_code, 0) << rank.err;
  EXPECT_NE(rank.out.find("{\"name\":\"model.layers.0.self_attn.q_proj.weight\",\"dtype\":\"BF16\","
                          "\"shape\":[128,256],\"bytes\":65536}\n"),
            std::string::npos)
      << rank.out;
  EXPECT_TRUE(rank.out.find("{\"summary\":{\"tensors\":21,") != std::string::npos) << rank.out;
}

TEST_F(PartitionCli, JsonPrintsOneSummaryObject) {
  const auto result = run_cli({"partition", model().string(), raw().string(), "--tp", "4",
                               "--format", "safetensors", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::regex summary(
      "\\{\"summary\":\\{\"source\":\"" + model().string() + "\",\"destination\":\"" +
      raw().string() +
      "\",\"format\":\"safetensors\",\"tp\":\\[4\\],\"tensors\":21,\"bytes_read\":3951104,"
      "\"objects\":4,\"bytes_written\":[0-9]+,\"artifacts\":3,\"seconds\":[0-9.]+\\}\\}\n");
  EXPECT_TRUE(std::regex_match(result.out, summary)) << result.out;
  EXPECT_TRUE(fs::exists(raw() / "TP4" / "shard3" / "model.safetensors"));
}

TEST_F(PartitionCli, ANonEmptyDestinationIsAUsageErrorUntilOverwriteIsGiven) {
  ASSERT_EQ(run_cli({"partition", model().string(), raw().string(), "--tp", "2"}).exit_code, 0);
  const auto again = run_cli({"partition", model().string(), raw().string(), "--tp", "2"});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_TRUE(again.err.starts_with("tensorstream: error: " + raw().string() +
                                    " is not empty (it holds 45 objects, e.g. "))
      << again.err;
  EXPECT_TRUE(again.err.ends_with("); pass --overwrite to write into it\n")) << again.err;
  EXPECT_EQ(again.out, "");
  const auto overwrite =
      run_cli({"partition", model().string(), raw().string(), "--tp", "2", "--overwrite"});
  EXPECT_EQ(overwrite.exit_code, 0) << overwrite.err;
}

TEST_F(PartitionCli, BadArgumentsAreOneLineUsageErrors) {
  const auto format =
      run_cli({"partition", model().string(), raw().string(), "--format", "gguf"});
  EXPECT_EQ(format.exit_code, 2);
  EXPECT_EQ(format.err,
            "tensorstream: error: --format: unknown format 'gguf' (known: traw, safetensors)\n");
  const auto heads = run_cli({"partition", model().string(), raw().string(), "--tp", "3"});
  EXPECT_EQ(heads.exit_code, 2);
  EXPECT_EQ(heads.err,
            "tensorstream: error: tensor \"model.embed_tokens.weight\": dim 0 of size 1024, "
            "padded to 1024, cannot be split evenly over 3 ranks\n");
  const auto http = run_cli({"partition", model().string(), "http://127.0.0.1:9/raw"});
  EXPECT_EQ(http.exit_code, 2);
  EXPECT_TRUE(http.err.starts_with("tensorstream: error: http://127.0.0.1:9/raw/config.json"))
      << http.err;
  EXPECT_FALSE(fs::exists(raw()));
}

TEST_F(PartitionCli, AMissingSourceIsARuntimeErrorNamingIt) {
  const auto result =
      run_cli({"partition", (dir_.path() / "nothing").string(), raw().string(), "--tp", "2"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.err.starts_with("tensorstream: error: ")) << result.err;
  EXPECT_NE(result.err.find((dir_.path() / "nothing").string()), std::string::npos) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_FALSE(fs::exists(raw()));
}

}  // namespace
}  // namespace tensorstream
