// Destinations of the commands that write: a store that cannot write is a usage error before
// anything is read, and no URL becomes a local folder (`shard DIR s3://b/x` once created one named
// `s3:` and reported success).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

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

// The store's refusal ends in the schemes that can write, a list that grows with the backends.
constexpr std::string_view read_only = ": this store is read-only; objects can be written to ";

// Before the source is read: SRC does not even exist, and the error is still the destination's.
TEST_F(WriteDestination, ShardToAStoreThatCannotWriteIsAnErrorBeforeReadingAnything) {
  const auto result = run_cli_in(cwd_.path(), {"shard", (source_.path() / "missing").string(),
                                               "http://127.0.0.1:1/x", "--tp", "2"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_TRUE(result.err.starts_with(
      "tensorstream: error: http://127.0.0.1:1/x/model-rank-0-part-0.safetensors" +
      std::string(read_only)))
      << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(wrote_locally());
}

TEST_F(WriteDestination, GenModelAndPrefetchToAStoreThatCannotWriteAreErrors) {
  const auto gen = run_cli_in(cwd_.path(), {"gen-model", "http://127.0.0.1:1/x"});
  EXPECT_EQ(gen.exit_code, 2);
  EXPECT_TRUE(gen.err.starts_with("tensorstream: error: http://127.0.0.1:1/x/config.json" +
                                  std::string(read_only)))
      << gen.err;
  EXPECT_EQ(gen.out, "");
  const auto prefetch =
      run_cli_in(cwd_.path(), {"prefetch", source_.path().string(), "http://127.0.0.1:1/x"});
  EXPECT_EQ(prefetch.exit_code, 2);
  EXPECT_EQ(prefetch.err,
            "tensorstream: error: http://127.0.0.1:1/x/config.json: this store is read-only; "
            "objects can be written to file://, s3://, gs:// and az:// only\n");
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
