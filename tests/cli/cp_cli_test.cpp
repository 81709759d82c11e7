// `tensorstream cp`: objects and prefixes between directories and s3rver, byte-exact, with the
// names aws s3 cp users expect and one-line errors for what cannot be copied.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "storage/s3rver_test.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/random_bytes.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::files_under;
using testing::lines_of;
using testing::random_bytes;
using testing::read_file;
using testing::run_cli;
using testing::run_process;
using testing::TempDir;
using testing::write_file;
using Names = std::vector<std::string>;

// A model directory with a nested file and one file larger than the chunks the tests read.
void write_model(const fs::path& directory) {
  generate_synthetic_model(directory, {.preset = "tiny", .shards = 2, .index = true});
  fs::create_directory(directory / "tokenizer");
  write_file(directory / "tokenizer" / "vocab.txt", "a b c");
  write_file(directory / "big.bin", random_bytes(1'000'003, 7));
}

void expect_same_files(const fs::path& expected, const fs::path& actual) {
  ASSERT_EQ(files_under(actual), files_under(expected));
  for (const auto& name : files_under(expected)) {
    EXPECT_EQ(read_file(actual / name), read_file(expected / name)) << name;
  }
}

class CpLocal : public ::testing::Test {
 protected:
  void SetUp() override { write_model(model_.path()); }

  std::string model() const { return model_.path().string(); }
  std::string out() const { return (out_.path() / "out").string(); }

  TempDir model_;
  TempDir out_;
};

TEST_F(CpLocal, ADirectoryIsCopiedWholeWithRecursive) {
  const auto result = run_cli({"cp", "-r", model(), out(), "--chunk-size", "64KiB"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_same_files(model_.path(), out());
  EXPECT_TRUE(result.out.starts_with("copied 8 files (")) << result.out;
  EXPECT_NE(result.out.find(" from " + model() + " to " + out() + " in "), std::string::npos)
      << result.out;
}

TEST_F(CpLocal, AFileIsCopiedIntoADirectoryUnderItsNameOrToTheNameGiven) {
  fs::create_directory(out());
  const auto into = run_cli({"cp", model() + "/big.bin", out()});
  ASSERT_EQ(into.exit_code, 0) << into.err;
  EXPECT_EQ(read_file(out() + "/big.bin"), read_file(model_.path() / "big.bin"));
  const auto renamed = run_cli({"cp", model() + "/config.json", out() + "/sub/settings.json"});
  ASSERT_EQ(renamed.exit_code, 0) << renamed.err;
  EXPECT_EQ(read_file(out() + "/sub/settings.json"), read_file(model_.path() / "config.json"));
  EXPECT_EQ(files_under(out()), (Names{"big.bin", "sub/settings.json"}));
}

TEST_F(CpLocal, ADirectoryWithoutRecursiveIsAUsageError) {
  const auto result = run_cli({"cp", model(), out()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "tensorstream: error: " + model() +
                            " is a directory or prefix; pass --recursive (-r) to copy what is "
                            "under it\n");
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(CpLocal, FiltersWithoutRecursiveAreAUsageError) {
  const auto result = run_cli({"cp", model() + "/config.json", out(), "--include", "*.json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: --include and --exclude choose objects under a prefix; they "
            "need --recursive (-r)\n");
}

TEST_F(CpLocal, AMissingFileIsNamed) {
  const auto result = run_cli({"cp", model() + "/nothere.json", out()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err,
            "tensorstream: error: " + model() + "/nothere.json: No such file or directory\n");
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(CpLocal, IncludeAndExcludeChooseByThePathBelowThePrefix) {
  const auto result = run_cli({"cp", "-r", model(), out(), "--include", "*.json", "--include",
                               "*/vocab.txt", "--exclude", "tokenizer.json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(files_under(out()), (Names{"config.json", "generation_config.json",
                                       "model.safetensors.index.json", "tokenizer/vocab.txt"}));
  const auto none = run_cli({"cp", "-r", model(), out(), "--include", "*.gguf"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "tensorstream: error: " + model() +
                          "/: no object under this prefix matches --include '*.gguf'\n");
}

TEST_F(CpLocal, AReadOnlyDestinationIsRefusedBeforeAnyRead) {
  const auto result = run_cli({"cp", model() + "/config.json", "http://127.0.0.1:1/x"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: http://127.0.0.1:1/x: this store is read-only; objects can be "
            "written to file://, s3://, gs:// and az:// only\n");
}

class CpS3 : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    write_model(model_.path());
    s3rver_->put_directory("models", "tiny/", model_.path());
  }

  // The object `key` of the bucket "models", as s3rver serves it.
  std::string object(const std::string& key) const {
    const auto result = run_process({testing::find_program("curl")->string(), "-sSf", s3rver_->endpoint() + "/models/" + key});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return result.out;
  }

  std::string out() const { return (out_.path() / "out").string(); }

  TempDir model_;
  TempDir out_;
};

TEST_F(CpS3, APrefixIsDownloadedByteExactWithAJsonLinePerFileAsItCompletes) {
  const auto result = run_cli(
      {"cp", "-r", "s3://models/tiny/", out(), "--json", "--chunk-size", "64KiB",
       "--concurrency", "4"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_same_files(model_.path(), out());
  auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 9u) << result.out;
  const std::string summary = lines.back();
  lines.pop_back();
  std::sort(lines.begin(), lines.end());
  EXPECT_EQ(lines[0], "{\"copied\":{\"source\":\"s3://models/tiny/big.bin\",\"destination\":\"" +
                          out() + "/big.bin\",\"bytes\":1000003}}");
  const auto total = [&] {
    std::uint64_t bytes = 0;
    for (const auto& name : files_under(model_.path())) bytes += fs::file_size(model_.path() / name);
    return bytes;
  }();
  EXPECT_TRUE(summary.starts_with("{\"summary\":{\"source\":\"s3://models/tiny/\",\"destination\":\"" +
                                  out() + "\",\"objects\":8,\"bytes\":" + std::to_string(total) +
                                  ",\"seconds\":"))
      << summary;
}

TEST_F(CpS3, ADirectoryIsUploadedAndAFileIntoAPrefixUnderItsName) {
  const auto result = run_cli({"cp", "-r", model_.path().string(), "s3://models/up",
                               "--chunk-size", "64KiB"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const auto& name : files_under(model_.path())) {
    EXPECT_EQ(object("up/" + name), read_file(model_.path() / name)) << name;
  }
  const auto single =
      run_cli({"cp", (model_.path() / "config.json").string(), "s3://models/one/"});
  ASSERT_EQ(single.exit_code, 0) << single.err;
  EXPECT_EQ(object("one/config.json"), read_file(model_.path() / "config.json"));
  EXPECT_TRUE(single.out.starts_with("copied 1 file (")) << single.out;
}

TEST_F(CpS3, APrefixNamedAsAnObjectSaysToPassRecursive) {
  const auto result = run_cli({"cp", "s3://models/tiny", out()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: s3://models/tiny is a prefix, not an object; pass --recursive "
            "(-r) to copy what is under it\n");
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(CpS3, AMissingObjectOrAnEmptyPrefixIsNamed) {
  const auto object = run_cli({"cp", "s3://models/tiny/nothere.json", out()});
  EXPECT_EQ(object.exit_code, 1);
  EXPECT_EQ(object.err,
            "tensorstream: error: s3://models/tiny/nothere.json: NoSuchKey: The specified key "
            "does not exist. (HTTP 404)\n");
  const auto prefix = run_cli({"cp", "-r", "s3://models/nothere/", out()});
  EXPECT_EQ(prefix.exit_code, 1);
  EXPECT_EQ(prefix.err, "tensorstream: error: s3://models/nothere/: nothing under this prefix\n");
  EXPECT_FALSE(fs::exists(out()));
}

}  // namespace
}  // namespace tensorstream
