// The CLI over gs://: ls, stream, inspect, and prefetch and gen-model to a bucket, against the
// GCS fixture as STORAGE_EMULATOR_HOST.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "support/gcs_fixture_server.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::ProcessResult;
using testing::TempDir;

ProcessResult cli(std::vector<std::string> arguments) {
  arguments.insert(arguments.begin(), TENSORSTREAM_CLI_PATH);
  return testing::run_process(arguments);
}

class GcsCli : public ::testing::Test {
 protected:
  GcsCli()
      : emulator_({.require_token = false}),
        environment_({"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GCE_METADATA_HOST"}) {
    environment_.set("STORAGE_EMULATOR_HOST", emulator_.host());
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
    emulator_.put_directory("models", "tiny/", model_.path());
  }

  std::string size_line(const std::string& name) const {
    char line[256];
    std::snprintf(line, sizeof line, "%12llu  gs://models/tiny/%s",
                  static_cast<unsigned long long>(std::filesystem::file_size(model_.path() / name)),
                  name.c_str());
    return line;
  }

  TempDir model_;
  testing::GcsFixtureServer emulator_;
  testing::ScopedEnvironment environment_;
};

TEST_F(GcsCli, LsListsObjectsWithSizesAcrossPages) {
  const auto result = cli({"ls", "gs://models/tiny/"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 7u) << result.out;
  EXPECT_EQ(lines[0], size_line("config.json"));
  EXPECT_EQ(lines[1], size_line("generation_config.json"));
  EXPECT_EQ(lines[2], size_line("model-00001-of-00002.safetensors"));
  EXPECT_EQ(lines[3], size_line("model-00002-of-00002.safetensors"));
  EXPECT_EQ(lines[4], size_line("model.safetensors.index.json"));
  EXPECT_EQ(lines[5], size_line("tokenizer.json"));
  EXPECT_TRUE(lines[6].starts_with("6 objects, ")) << lines[6];
}

TEST_F(GcsCli, LsOfABucketHoldingOnlyPrefixesShowsThem) {
  const auto result = cli({"ls", "gs://models"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "         PRE  gs://models/tiny/\n0 objects, 0 B; 1 prefix\n");
}

TEST_F(GcsCli, StreamOverGsGivesTheSameChecksumsAsTheLocalFiles) {
  const auto local = cli({"stream", model_.path().string() + "/", "--checksum", "sha256"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto remote =
      cli({"stream", "gs://models/tiny/", "--checksum", "sha256", "--chunk-size", "100KB"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out), testing::sorted_tensor_lines(local.out));
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out).size(),
            llama_tensors(synthetic_preset("tiny")).size());
}

TEST_F(GcsCli, MissingObjectIsAClearError) {
  const auto result = cli({"inspect", "gs://models/tiny/absent.safetensors"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err,
            "tensorstream: error: gs://models/tiny/absent.safetensors: No such object: "
            "models/tiny/absent.safetensors (HTTP 404)\n");
}

TEST_F(GcsCli, PrefetchUploadsToABucketPrefix) {
  const auto uploaded =
      cli({"prefetch", model_.path().string(), "gs://models/copy", "--include-safetensors"});
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  EXPECT_NE(uploaded.out.find(" to gs://models/copy\n"), std::string::npos) << uploaded.out;
  EXPECT_EQ(emulator_.unfinished_sessions(), 0u);
  const auto listed = cli({"ls", "gs://models/copy/"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("gs://models/copy/model.safetensors.index.json"), std::string::npos)
      << listed.out;
  // The uploaded checkpoint streams with the same checksums as the original.
  const auto original =
      cli({"stream", model_.path().string() + "/", "--json", "--checksum", "sha256"});
  const auto copy = cli({"stream", "gs://models/copy/", "--json", "--checksum", "sha256"});
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  EXPECT_EQ(testing::sorted_tensor_lines(copy.out), testing::sorted_tensor_lines(original.out));
}

TEST_F(GcsCli, GenModelToABucketStreamsBackLikeItsLocalFiles) {
  TempDir local;
  ASSERT_EQ(cli({"gen-model", local.path().string(), "--shards", "2"}).exit_code, 0);
  const auto generated = cli({"gen-model", "gs://models/generated", "--shards", "2"});
  ASSERT_EQ(generated.exit_code, 0) << generated.err;
  EXPECT_EQ(generated.out, "wrote 21 tensors (3.8 MiB) in 2 shards to gs://models/generated\n");
  EXPECT_EQ(emulator_.unfinished_sessions(), 0u);
  const auto expected = cli({"stream", local.path().string() + "/", "--checksum", "sha256"});
  const auto uploaded = cli({"stream", "gs://models/generated/", "--checksum", "sha256"});
  ASSERT_EQ(expected.exit_code, 0) << expected.err;
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  EXPECT_EQ(testing::sorted_tensor_lines(uploaded.out).size(), 21u);
  EXPECT_EQ(testing::sorted_tensor_lines(uploaded.out), testing::sorted_tensor_lines(expected.out));
}

}  // namespace
}  // namespace tensorstream
