// The CLI over s3://: ls, stream and inspect against s3rver, and the storage flags.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/s3rver_test.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::ProcessResult;
using testing::run_cli;
using testing::TempDir;

class S3Cli : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    // The tests name the endpoint with --endpoint-url where they mean to.
    unset("AWS_ENDPOINT_URL");
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
    std::filesystem::create_directory(model_.path() / "tokenizer");
    std::ofstream(model_.path() / "tokenizer" / "vocab.txt") << "a b c";
    s3rver_->put_directory("models", "tiny/", model_.path());
  }

  std::uint64_t file_size(const std::string& name) const {
    return std::filesystem::file_size(model_.path() / name);
  }

  std::string size_line(const std::string& name) const {
    char line[256];
    std::snprintf(line, sizeof line, "%12llu  s3://models/tiny/%s",
                  static_cast<unsigned long long>(file_size(name)), name.c_str());
    return line;
  }

  TempDir model_;
};

TEST_F(S3Cli, LsListsObjectsWithSizesOneLevelDeepAndThePrefixesBelow) {
  const auto result = run_cli({"ls", "s3://models/tiny/", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 8u) << result.out;
  EXPECT_EQ(lines[0], "         PRE  s3://models/tiny/tokenizer/");
  EXPECT_EQ(lines[1], size_line("config.json"));
  EXPECT_EQ(lines[3], size_line("model-00001-of-00002.safetensors"));
  EXPECT_EQ(lines[4], size_line("model-00002-of-00002.safetensors"));
  EXPECT_EQ(lines[5], size_line("model.safetensors.index.json"));
  EXPECT_EQ(lines[6], size_line("tokenizer.json"));
  EXPECT_TRUE(lines[7].starts_with("6 objects, ")) << lines[7];
  EXPECT_TRUE(lines[7].ends_with("; 1 prefix")) << lines[7];
}

TEST_F(S3Cli, LsWithPatternsShowsTheObjectsTheyTakeAndNoPrefixes) {
  const auto result = run_cli({"ls", "s3://models/tiny/", "-r", "--include", "*.json",
                               "--include", "*/vocab.txt", "--exclude", "gen*", "--endpoint-url",
                               s3rver_->endpoint()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 5u) << result.out;
  EXPECT_EQ(lines[0], size_line("config.json"));
  EXPECT_EQ(lines[1], size_line("model.safetensors.index.json"));
  EXPECT_EQ(lines[2], size_line("tokenizer.json"));
  EXPECT_EQ(lines[3], size_line("tokenizer/vocab.txt"));
  EXPECT_TRUE(lines[4].starts_with("4 objects, ")) << lines[4];
  const auto one_level = run_cli({"ls", "s3://models/tiny/", "--include", "*.safetensors",
                                    "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(one_level.exit_code, 0) << one_level.err;
  EXPECT_EQ(lines_of(one_level.out).size(), 3u) << one_level.out;  // two shards, the total
  const auto none = run_cli(
      {"ls", "s3://models/tiny/", "--include", "*.gguf", "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "tensorstream: error: s3://models/tiny/: no object under this prefix "
                      "matches --include '*.gguf'\n");
}

TEST_F(S3Cli, LsOfS3AloneListsTheBuckets) {
  const auto created = testing::run_process(
      {testing::find_program("curl")->string(), "-sSf", "-X", "PUT", s3rver_->endpoint() + "/other"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const auto result = run_cli({"ls", "s3://", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "      BUCKET  s3://models/\n"
            "      BUCKET  s3://other/\n"
            "2 buckets\n");
  const auto json = run_cli({"ls", "s3://", "--json", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out,
            "{\"url\":\"s3://models/\",\"bucket\":true}\n"
            "{\"url\":\"s3://other/\",\"bucket\":true}\n");
}

// A bucket whose objects all sit under prefixes is not empty.
TEST_F(S3Cli, LsOfABucketHoldingOnlyPrefixesShowsThem) {
  s3rver_->put_directory("models", "other/", model_.path() / "tokenizer");
  const auto result = run_cli({"ls", "s3://models", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out,
            "         PRE  s3://models/other/\n"
            "         PRE  s3://models/tiny/\n"
            "0 objects, 0 B; 2 prefixes\n");
  const auto json =
      run_cli({"ls", "s3://models/", "--json", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out,
            "{\"url\":\"s3://models/other/\",\"prefix\":true}\n"
            "{\"url\":\"s3://models/tiny/\",\"prefix\":true}\n");
}

// As `aws s3 ls`: without a trailing '/', the entries of the level above whose names begin with
// the URL's last part; with it, what lies inside.
TEST_F(S3Cli, LsWithoutATrailingSlashListsTheNamesThatBeginWithItsLastPart) {
  set("AWS_ENDPOINT_URL", s3rver_->endpoint());
  s3rver_->put_directory("models", "tiny2/", model_.path() / "tokenizer");
  s3rver_->put_directory("models", "other/", model_.path() / "tokenizer");
  for (const std::string url : {"s3://models/ti", "s3://models/tiny"}) {
    const auto start = run_cli({"ls", url});
    ASSERT_EQ(start.exit_code, 0) << start.err;
    EXPECT_EQ(start.out,
              "         PRE  s3://models/tiny/\n"
              "         PRE  s3://models/tiny2/\n"
              "0 objects, 0 B; 2 prefixes\n")
        << url;
  }
  const auto inside = run_cli({"ls", "s3://models/tiny2/"});
  ASSERT_EQ(inside.exit_code, 0) << inside.err;
  EXPECT_EQ(inside.out, "           5  s3://models/tiny2/vocab.txt\n1 object, 5 B\n");
  const auto recursive = run_cli({"ls", "s3://models/tiny2", "-r"});
  ASSERT_EQ(recursive.exit_code, 0) << recursive.err;
  EXPECT_EQ(recursive.out, "           5  s3://models/tiny2/vocab.txt\n1 object, 5 B\n");
  const auto names = run_cli({"ls", "s3://models/tiny/model-0"});
  ASSERT_EQ(names.exit_code, 0) << names.err;
  EXPECT_EQ(lines_of(names.out),
            (std::vector<std::string>{size_line("model-00001-of-00002.safetensors"),
                                      size_line("model-00002-of-00002.safetensors"),
                                      lines_of(names.out).back()}));
}

TEST_F(S3Cli, LsRecursiveAsJsonIncludesNestedObjects) {
  set("AWS_ENDPOINT_URL", s3rver_->endpoint());
  const auto result = run_cli({"ls", "s3://models/tiny", "--recursive", "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 7u) << result.out;
  EXPECT_EQ(lines[6], "{\"url\":\"s3://models/tiny/tokenizer/vocab.txt\",\"size\":5}");
}

TEST_F(S3Cli, LsOfAnObjectGivesItsSize) {
  set("AWS_ENDPOINT_URL", s3rver_->endpoint());
  const auto result = run_cli({"ls", "s3://models/tiny/model.safetensors.index.json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(lines_of(result.out)[0], size_line("model.safetensors.index.json"));
}

TEST_F(S3Cli, StreamOverS3GivesTheSameChecksumsAsTheLocalFiles) {
  const auto local = run_cli({"stream", model_.path().string() + "/", "--checksum", "sha256"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  const auto remote = run_cli({"stream", "s3://models/tiny/", "--checksum", "sha256",
                           "--endpoint-url", s3rver_->endpoint(), "--chunk-size", "100KB"});
  ASSERT_EQ(remote.exit_code, 0) << remote.err;
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out), testing::sorted_tensor_lines(local.out));
  EXPECT_EQ(testing::sorted_tensor_lines(remote.out).size(),
            llama_tensors(synthetic_preset("tiny")).size());
}

TEST_F(S3Cli, NoSignRequestReadsPublicObjects) {
  unset("AWS_ACCESS_KEY_ID");
  unset("AWS_SECRET_ACCESS_KEY");
  const auto result = run_cli({"inspect", "s3://models/tiny/", "--no-sign-request", "--endpoint-url",
                           s3rver_->endpoint(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\"total_tensors\":"), std::string::npos);
}

TEST_F(S3Cli, MissingCredentialsFailNamingTheChain) {
  unset("AWS_ACCESS_KEY_ID");
  unset("AWS_SECRET_ACCESS_KEY");
  const auto result = run_cli({"ls", "s3://models/tiny/", "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.err.starts_with("tensorstream: error: AWS credentials from ")) << result.err;
}

TEST_F(S3Cli, AMissingBucketIsAClearError) {
  const auto result =
      run_cli({"ls", "s3://absent-bucket/", "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err,
            "tensorstream: error: s3://absent-bucket/: NoSuchBucket: The specified bucket does "
            "not exist (HTTP 404)\n");
}

// A mistyped prefix is an error naming it, as `aws s3 ls` exits 1 there: never "0 objects" or
// "prefetched 0 files" with success, and no directory made for nothing.
TEST_F(S3Cli, AnEmptyPrefixIsAnErrorForLsAndPrefetch) {
  const auto listed = run_cli({"ls", "s3://models/nokey/", "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(listed.exit_code, 1);
  EXPECT_EQ(listed.out, "");
  EXPECT_EQ(listed.err, "tensorstream: error: s3://models/nokey/: nothing under this prefix\n");
  const auto without_slash =
      run_cli({"ls", "s3://models/nokey", "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(without_slash.exit_code, 1);
  EXPECT_EQ(without_slash.err,
            "tensorstream: error: s3://models/nokey: nothing under this prefix\n");

  TempDir local;
  const auto target = local.path() / "dir";
  const auto prefetched = run_cli({"prefetch", "s3://models/nothere/", target.string(),
                                   "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(prefetched.exit_code, 1);
  EXPECT_EQ(prefetched.out, "");
  EXPECT_EQ(prefetched.err,
            "tensorstream: error: s3://models/nothere/: nothing under this prefix\n");
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST_F(S3Cli, PrefetchAndShardReadFromTheEndpointTheyAreGiven) {
  TempDir local;
  const auto prefetched = run_cli({"prefetch", "s3://models/tiny/", local.path().string(),
                                   "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(prefetched.exit_code, 0) << prefetched.err;
  EXPECT_TRUE(std::filesystem::exists(local.path() / "tokenizer" / "vocab.txt"));
  EXPECT_FALSE(std::filesystem::exists(local.path() / "model-00001-of-00002.safetensors"));

  TempDir ranks;
  const auto sharded = run_cli({"shard", "s3://models/tiny/", ranks.path().string(), "--tp", "2",
                                "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(sharded.exit_code, 0) << sharded.err;
  EXPECT_TRUE(std::filesystem::exists(ranks.path() / "model-rank-1-part-0.safetensors"));
}

TEST_F(S3Cli, PrefetchTakesTheObjectsIncludeAndExcludeChoose) {
  TempDir local;
  const auto prefetched =
      run_cli({"prefetch", "s3://models/tiny/", local.path().string(), "--include", "*.json",
               "--exclude", "gen*", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(prefetched.exit_code, 0) << prefetched.err;
  EXPECT_EQ(testing::files_under(local.path()),
            (std::vector<std::string>{"config.json", "model.safetensors.index.json",
                                      "tokenizer.json"}));
  const auto none = run_cli({"prefetch", "s3://models/tiny/", local.path().string() + "/none",
                             "--include", "*.gguf", "--endpoint-url", s3rver_->endpoint()});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "tensorstream: error: s3://models/tiny/: no object under this prefix "
                      "matches --include '*.gguf'\n");
  EXPECT_FALSE(std::filesystem::exists(local.path() / "none"));
}

TEST_F(S3Cli, PrefetchUploadsToABucketPrefix) {
  const auto uploaded = run_cli({"prefetch", model_.path().string(), "s3://models/copy",
                                 "--include-safetensors", "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  EXPECT_NE(uploaded.out.find(" to s3://models/copy\n"), std::string::npos) << uploaded.out;
  const auto listed = run_cli({"ls", "s3://models/copy/", "--recursive", "--endpoint-url",
                               s3rver_->endpoint()});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("s3://models/copy/tokenizer/vocab.txt"), std::string::npos)
      << listed.out;
  // The uploaded checkpoint streams with the same checksums as the original.
  const auto original = run_cli({"stream", model_.path().string() + "/", "--json", "--checksum",
                                 "sha256"});
  const auto copy = run_cli({"stream", "s3://models/copy/", "--json", "--checksum", "sha256",
                             "--endpoint-url", s3rver_->endpoint()});
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  EXPECT_EQ(testing::sorted_tensor_lines(copy.out), testing::sorted_tensor_lines(original.out));
}

}  // namespace
}  // namespace tensorstream
