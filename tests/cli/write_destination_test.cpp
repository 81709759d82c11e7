// Commands that write local directories refuse bucket URLs: `shard DIR s3://b/x` once created a
// local folder named `s3:` and reported success.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "support/process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::ProcessResult;
using testing::run_cli;
using testing::TempDir;

// Runs the CLI with `arguments` from inside `directory`, where relative paths would land.
ProcessResult run_cli_in(const fs::path& directory, std::vector<std::string> arguments) {
  const fs::path before = fs::current_path();
  fs::current_path(directory);
  ProcessResult result = run_cli(std::move(arguments));
  fs::current_path(before);
  return result;
}

class WriteDestination : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_cli({"gen-model", source_.path().string(), "--preset", "tiny"}).exit_code, 0);
    std::ofstream(source_.path() / "tokenizer.json") << "{}";
  }

  // Whether the command left anything at all in the working directory.
  bool wrote_locally() const { return !fs::is_empty(cwd_.path()); }

  TempDir source_;
  TempDir cwd_;
};

TEST_F(WriteDestination, ShardToABucketIsAnErrorAndWritesNothingLocally) {
  for (const std::string url : {"s3://b/x", "gs://b/x", "http://127.0.0.1:1/x"}) {
    SCOPED_TRACE(url);
    const auto result =
        run_cli_in(cwd_.path(), {"shard", source_.path().string(), url, "--tp", "2"});
    EXPECT_EQ(result.exit_code, 2);
    const std::string scheme = url.substr(0, url.find(':'));
    EXPECT_EQ(result.err, "tensorstream: error: " + url +
                              ": shard writes to local directories only; writing to " + scheme +
                              ":// is not supported yet\n");
    EXPECT_EQ(result.out, "");
    EXPECT_FALSE(wrote_locally());
  }
}

TEST_F(WriteDestination, GenModelToABucketAndPrefetchToHttpAreErrors) {
  const auto gen = run_cli_in(cwd_.path(), {"gen-model", "s3://b/x", "--preset", "tiny"});
  EXPECT_EQ(gen.exit_code, 2);
  EXPECT_EQ(gen.err,
            "tensorstream: error: s3://b/x: gen-model writes to local directories only; writing "
            "to s3:// is not supported yet\n");
  const auto prefetch =
      run_cli_in(cwd_.path(), {"prefetch", source_.path().string(), "http://127.0.0.1:1/x"});
  EXPECT_EQ(prefetch.exit_code, 2);
  EXPECT_EQ(prefetch.err,
            "tensorstream: error: http://127.0.0.1:1/x/config.json: this store is read-only; "
            "objects can be written to file://, s3:// and gs:// only\n");
  EXPECT_FALSE(wrote_locally());
}

TEST_F(WriteDestination, FileUrlsNameLocalDirectories) {
  const fs::path target = cwd_.path() / "ranks";
  const auto shard = run_cli_in(cwd_.path(), {"shard", source_.path().string(),
                                              "file://" + target.string(), "--tp", "2"});
  ASSERT_EQ(shard.exit_code, 0) << shard.err;
  EXPECT_TRUE(fs::exists(target / "model-rank-1-part-0.safetensors"));
  const auto prefetch =
      run_cli_in(cwd_.path(), {"prefetch", source_.path().string(), "file://" + target.string()});
  ASSERT_EQ(prefetch.exit_code, 0) << prefetch.err;
  EXPECT_TRUE(fs::exists(target / "tokenizer.json"));
  EXPECT_FALSE(fs::exists(cwd_.path() / "file:"));
}

}  // namespace
}  // namespace tensorstream
