// `tensorstream partition`: what a user sees, and that what it writes streams back.

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "storage/s3_upload_test.hpp"
#include "support/child_process.hpp"
#include "support/fault_proxy.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"

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

// An HTTP server cannot list: config.json and the tokenizer are fetched by name, after the
// weights, as from a store that lists.
TEST_F(PartitionCli, FromHttpTheArtifactsComeByName) {
  if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  testing::NginxServer nginx({.root = dir_.path()});
  const std::string source = nginx.base_url() + "/model/model.safetensors";
  const auto result = run_cli({"partition", source, raw().string(), "--tp", "2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("and 3 other files in " + raw().string()), std::string::npos)
      << result.out;
  for (const char* file : {"config.json", "generation_config.json", "tokenizer.json"}) {
    EXPECT_EQ(testing::read_file(raw() / file), testing::read_file(model() / file)) << file;
  }
  EXPECT_EQ(run_cli({"stream", raw().string(), "--tp", "2", "--rank", "1"}).exit_code, 0);
}

TEST_F(PartitionCli, JsonPrintsOneSummaryObject) {
  const auto result = run_cli({"partition", model().string(), raw().string(), "--tp", "4",
                               "--format", "safetensors", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::regex summary(
      "\\{\"summary\":\\{\"source\":\"" + model().string() + "\",\"destination\":\"" +
      raw().string() +
      "\",\"format\":\"safetensors\",\"tp\":\\[4\\],\"tensors\":21,\"bytes_read\":3951104,"
      "\"objects\":4,\"bytes_written\":[0-9]+,\"artifacts\":3,\"stale_uploads_removed\":0,\"seconds\":[0-9.]+\\}\\}\n");
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

// One slash short, the destination once became a local folder named "s3:" and the run "succeeded".
TEST_F(PartitionCli, AMistypedUrlIsAUsageErrorNotALocalFolder) {
  for (const std::string command : {"partition", "shard"}) {
    const auto result = run_cli({command, model().string(), "s3:/bucket/raw", "--tp", "2"});
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_EQ(result.err,
              "tensorstream: error: invalid URL 's3:/bucket/raw': a URL needs 's3://'; write "
              "./s3:/bucket/raw for a local path\n")
        << command;
  }
  const auto gen = run_cli({"gen-model", "GS:bucket/m", "--preset", "tiny"});
  EXPECT_EQ(gen.exit_code, 2);
  EXPECT_EQ(gen.err,
            "tensorstream: error: invalid URL 'GS:bucket/m': a URL needs 'gs://'; write "
            "./GS:bucket/m for a local path\n");
  EXPECT_FALSE(fs::exists("s3:"));
  EXPECT_FALSE(fs::exists("GS:bucket"));
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

class PartitionS3Cli : public s3::testing::S3UploadTest {
 protected:
  // A one-layer Llama with a 20 MiB embedding: at TP 1 and 2 it goes up in 8 MiB parts.
  void SetUp() override {
    S3UploadTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    const LlamaConfig config{.hidden_size = 256, .intermediate_size = 512, .num_layers = 1,
                             .num_heads = 8, .num_kv_heads = 2, .vocab_size = 40000,
                             .max_position_embeddings = 2048};
    write_safetensors(model_.path() / "model.safetensors", llama_tensors(config),
                      [](const TensorSpec& tensor, std::uint64_t offset, std::span<std::byte> out) {
                        fill_synthetic_bytes(tensor.name, offset, out);
                      });
    std::ofstream(model_.path() / "config.json")
        << "{\"hidden_size\":256,\"num_attention_heads\":8,\"num_key_value_heads\":2}";
    s3rver_->put_directory("models", "hf/big/", model_.path());
  }

  TempDir model_;
};

// A partition killed in the middle of a multipart upload leaves no visible object, only the
// unfinished upload; rerun with --abort-stale, it removes that upload and completes exactly.
TEST_F(PartitionS3Cli, AKilledRunLeavesNoPartialObjectAndAbortStaleCleansUpAfterIt) {
  std::atomic<pid_t> child{0};
  std::atomic<bool> killed{false};
  testing::FaultProxy killer(s3rver_->port(), {.answer = [&](const std::string& method,
                                                             const std::string& target) {
    if (method == "PUT" && target.find("partNumber=") != std::string::npos &&
        !killed.exchange(true)) {
      while (child.load() == 0) std::this_thread::yield();
      ::kill(child.load(), SIGKILL);
    }
    return std::string{};
  }});
  set("AWS_ENDPOINT_URL", killer.endpoint());
  TempDir logs;
  testing::ChildProcess run({TENSORSTREAM_CLI_PATH, "partition", "s3://models/hf/big/",
                             "s3://models/raw/big/", "--tp", "1,2"},
                            logs.path() / "partition.log");
  child = run.pid();
  const int status = run.wait();
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      << testing::read_text_file(logs.path() / "partition.log");
  settle(killer);
  const auto left = s3rver_->unfinished_uploads("models").size();
  EXPECT_GE(left, 1u);
  EXPECT_FALSE(exists("/raw/big/TP1/shard0/model.embed_tokens.weight.bin"));
  EXPECT_FALSE(exists("/raw/big/config.json"));

  testing::FaultProxy cleaner(s3rver_->port(), {.answer = multipart_emulation()});
  set("AWS_ENDPOINT_URL", cleaner.endpoint());
  const auto rerun = run_cli({"partition", "s3://models/hf/big/", "s3://models/raw/big/", "--tp",
                              "1,2", "--overwrite", "--abort-stale"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_TRUE(rerun.out.starts_with("removed " + std::to_string(left) +
                                    " stale uploads under s3://models/raw/big/\n"))
      << rerun.out;
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());

  // TP 1's tensors are the source's, byte for byte.
  set("AWS_ENDPOINT_URL", s3rver_->endpoint());
  const auto streamed = run_cli({"stream", "s3://models/raw/big/", "--tp", "1", "--json",
                                 "--checksum", "sha256"});
  const auto source =
      run_cli({"stream", model_.path().string(), "--json", "--checksum", "sha256"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  EXPECT_EQ(testing::sorted_tensor_lines(streamed.out), testing::sorted_tensor_lines(source.out));
}

}  // namespace
}  // namespace tensorstream
