// `tensorstream prefetch`, and `stream` taking its URL and sizes from the environment.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "base/byte_size.hpp"
#include "support/model_loader_environment.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::lines_of;
using testing::ProcessResult;
using testing::run_cli;
using testing::TempDir;

std::uint64_t size_of(const fs::path& root, const std::vector<std::string>& files) {
  std::uint64_t bytes = 0;
  for (const auto& file : files) bytes += fs::file_size(root / file);
  return bytes;
}

class ModelLoaderCli : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
  }

  std::string model() const { return model_.path().string() + "/"; }
  fs::path target() const { return target_.path() / "artifacts"; }

  // The environment the child processes inherit.
  testing::ModelLoaderEnvironment environment_;
  TempDir model_;
  TempDir target_;
};

const std::vector<std::string> artifacts{"config.json", "generation_config.json",
                                         "model.safetensors.index.json", "tokenizer.json"};

TEST_F(ModelLoaderCli, PrefetchCopiesTheArtifactsAndPrintsOneLine) {
  const auto result = run_cli({"prefetch", model(), target().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  char expected[512];
  std::snprintf(expected, sizeof expected, "prefetched 4 files (%s) from %s to %s\n",
                format_byte_size(size_of(model_.path(), artifacts)).c_str(),
                model().c_str(), target().c_str());
  EXPECT_EQ(result.out, expected);
  for (const auto& file : artifacts) EXPECT_TRUE(fs::exists(target() / file)) << file;
  EXPECT_FALSE(fs::exists(target() / "model-00001-of-00002.safetensors"));
}

TEST_F(ModelLoaderCli, PrefetchIncludeSafetensorsCopiesTheWeights) {
  const auto result = run_cli({"prefetch", model(), target().string(), "--include-safetensors",
                           "--chunk-size", "64KiB", "--concurrency", "2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(fs::file_size(target() / "model-00002-of-00002.safetensors"),
            fs::file_size(model_.path() / "model-00002-of-00002.safetensors"));
  EXPECT_EQ(lines_of(result.out).at(0).rfind("prefetched 6 files", 0), 0u) << result.out;
}

TEST_F(ModelLoaderCli, PrefetchTakesBothPathsFromTheEnvironment) {
  environment_.set("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", model());
  environment_.set("TENSORSTREAM_LOCAL_MODEL_PATH", target().string());
  const auto result = run_cli({"prefetch"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const auto& file : artifacts) EXPECT_TRUE(fs::exists(target() / file)) << file;
}

TEST_F(ModelLoaderCli, PrefetchWithoutDirectoryOrVariableWritesNothing) {
  const auto result = run_cli({"prefetch", model()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: no local directory was given, and neither "
            "TENSORSTREAM_LOCAL_MODEL_PATH nor FLYTE_MODEL_LOADER_LOCAL_MODEL_PATH is set\n");
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(fs::exists("/srv/model"));
}

// Over http the artifacts are asked for by name; a server nobody runs fails at once.
TEST_F(ModelLoaderCli, PrefetchFromAnHttpServerNobodyRunsFailsAtOnce) {
  const auto result = run_cli({"prefetch", "http://127.0.0.1:9/m/", target().string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.err.starts_with("tensorstream: error: http://127.0.0.1:9/m/")) << result.err;
  EXPECT_TRUE(result.err.ends_with(": connection refused (nothing listens there)\n")) << result.err;
  EXPECT_FALSE(std::filesystem::exists(target()));
}

TEST_F(ModelLoaderCli, StreamWithoutUrlStreamsTheConfiguredRemotePath) {
  environment_.set("FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH", model());
  const auto result = run_cli({"stream", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(lines_of(result.out).size(), llama_tensors(synthetic_preset("tiny")).size() + 1);
}

TEST_F(ModelLoaderCli, StreamWithoutUrlOrVariableNamesBothVariables) {
  const auto result = run_cli({"stream"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: no remote model path was given, and neither "
            "TENSORSTREAM_REMOTE_MODEL_PATH nor FLYTE_MODEL_LOADER_REMOTE_MODEL_PATH is set\n");
}

TEST_F(ModelLoaderCli, StreamWithAMalformedVariableNamesIt) {
  environment_.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "16XB");
  const auto result = run_cli({"stream", model()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: FLYTE_MODEL_LOADER_CHUNK_SIZE='16XB' is not a positive size "
            "(e.g. 4096, 512KiB, 16MiB)\n");
}

TEST_F(ModelLoaderCli, AChunkSizeVariableWithABarePrefixIsAmbiguousAsTheFlagIs) {
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "8M");
  const auto result = run_cli({"stream", model()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "tensorstream: error: TENSORSTREAM_CHUNK_SIZE='8M' is ambiguous: write "
                        "8MiB (8388608 bytes) or 8MB (8000000 bytes)\n");
}

// One syntax everywhere: the environment takes the flags' sizes.
TEST_F(ModelLoaderCli, StreamTakesAChunkSizeInTheFlagsSyntaxFromTheEnvironment) {
  environment_.set("TENSORSTREAM_CHUNK_SIZE", "128KB");
  const auto result = run_cli({"stream", model(), "--json"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\"chunk_size\":128000,"), std::string::npos) << result.out;
}

}  // namespace
}  // namespace tensorstream
