// `tensorstream cp`: objects and prefixes between directories, s3rver, nginx and the Hub fixture,
// byte-exact, with the names and filters aws s3 cp users expect and one-line errors for what
// cannot be copied.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "storage/hf/hf_test_environment.hpp"
#include "storage/s3rver_test.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/random_bytes.hpp"
#include "support/skip.hpp"
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
using testing::summary_value;
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

// Runs the tool from `directory` while alive, for destinations named without a directory.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& directory) : previous_(fs::current_path()) {
    fs::current_path(directory);
  }
  ~WorkingDirectory() { fs::current_path(previous_); }

 private:
  fs::path previous_;
};

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

// As cp and aws s3 cp take it: an existing directory receives the file, any other name is the
// file's.
TEST_F(CpLocal, ABareNameIsTheFileUnlessADirectoryHasIt) {
  const WorkingDirectory here(out_.path());
  const auto file = run_cli({"cp", model() + "/config.json", "out1"});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(read_file(out_.path() / "out1"), read_file(model_.path() / "config.json"));
  fs::create_directory(out_.path() / "dir1");
  const auto into = run_cli({"cp", model() + "/config.json", "dir1"});
  ASSERT_EQ(into.exit_code, 0) << into.err;
  EXPECT_EQ(files_under(out_.path()), (Names{"dir1/config.json", "out1"}));
}

// The aws habit: filters apply in order, the later winning, so that everything is left out and
// then the JSON files taken back.
TEST_F(CpLocal, FiltersApplyInTheirOrderAsAwsAppliesThem) {
  const auto json = run_cli({"cp", "-r", model(), out(), "--exclude", "*", "--include", "*.json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(files_under(out()), (Names{"config.json", "generation_config.json",
                                       "model.safetensors.index.json", "tokenizer.json"}));
  const auto back = run_cli({"cp", "-r", model(), out() + "2", "--exclude", "tokenizer*",
                             "--include", "tokenizer/*"});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(files_under(out() + "2").size(), 7u);
  EXPECT_TRUE(fs::exists(out() + "2/tokenizer/vocab.txt"));
  EXPECT_FALSE(fs::exists(out() + "2/tokenizer.json"));

  const auto none = run_cli({"cp", "-r", model(), out(), "--include", "*.json", "--exclude", "*"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_EQ(none.err, "tensorstream: error: " + model() +
                          "/: --exclude '*' leaves out every object under this prefix that "
                          "--include '*.json' takes (filters apply in order, the last one a path "
                          "matches deciding)\n");
}

// Where an --exclude wins whatever the order, the error names the one that left out everything.
TEST_F(CpLocal, OtherCommandsSayWhichExcludeLeftOutEverything) {
  const auto prefetch = run_cli({"prefetch", model(), out(), "--exclude", "*", "--include", "*.json"});
  EXPECT_EQ(prefetch.exit_code, 1);
  EXPECT_EQ(prefetch.err, "tensorstream: error: " + model() +
                              "/: --exclude '*' leaves out every object under this prefix that "
                              "--include '*.json' takes (an --exclude wins over every --include)\n");
  const auto ls = run_cli({"ls", "-r", model(), "--exclude", "big.bin", "--exclude", "*"});
  EXPECT_EQ(ls.exit_code, 1);
  EXPECT_EQ(ls.err, "tensorstream: error: " + model() +
                        "/: --exclude 'big.bin' --exclude '*' leave out every object under this "
                        "prefix\n");
  const auto stream = run_cli({"stream", model(), "--exclude", "*", "--include", "model.*"});
  EXPECT_EQ(stream.exit_code, 1);
  EXPECT_EQ(stream.err, "tensorstream: error: " + model() +
                            ": --exclude '*' leaves out every tensor that --include 'model.*' "
                            "takes (an --exclude wins over every --include)\n");
}

// On a terminal the summary says what the bar's final line would: the bar is erased instead.
TEST_F(CpLocal, TheBarMakesWayForTheSummary) {
  const auto result = run_cli({"cp", "-r", model(), out(), "--progress", "always"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err.find("average"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find('\n'), std::string::npos) << result.err;
  EXPECT_TRUE(result.err.empty() || result.err.ends_with("\r\033[K")) << result.err;
  EXPECT_TRUE(result.out.starts_with("copied 8 files (")) << result.out;
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

TEST_F(CpS3, ABareNameIsDownloadedToAndUploadedFrom) {
  const WorkingDirectory here(out_.path());
  const auto down = run_cli({"cp", "s3://models/tiny/config.json", "out1"});
  ASSERT_EQ(down.exit_code, 0) << down.err;
  EXPECT_EQ(read_file(out_.path() / "out1"), read_file(model_.path() / "config.json"));
  const auto up = run_cli({"cp", "out1", "s3://models/one/"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  EXPECT_EQ(object("one/out1"), read_file(model_.path() / "config.json"));
}

// As `stream --json` gives them: what came from the cache and what from the source.
TEST_F(CpS3, JsonCountsTheBytesOfACache) {
  const std::string cache = (out_.path() / "cache").string();
  std::uint64_t total = 0;
  for (const auto& name : files_under(model_.path())) total += fs::file_size(model_.path() / name);
  const auto first = run_cli({"cp", "-r", "s3://models/tiny/", out(), "--json", "--cache", cache});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const std::string first_summary = lines_of(first.out).back();
  EXPECT_EQ(summary_value(first_summary, "cache_bytes"), 0) << first_summary;
  EXPECT_EQ(summary_value(first_summary, "source_bytes"), static_cast<long long>(total));
  const auto again = run_cli({"cp", "-r", "s3://models/tiny/", out() + "2", "--json", "--cache", cache});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  const std::string summary = lines_of(again.out).back();
  EXPECT_EQ(summary_value(summary, "cache_bytes"), static_cast<long long>(total)) << summary;
  EXPECT_EQ(summary_value(summary, "source_bytes"), 0) << summary;
  expect_same_files(model_.path(), out() + "2");
}

// An http(s) server cannot list: cp -r copies what a stream of the prefix reads, found through
// the index, and the model's other files, asked for by name.
class CpHttp : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    write_model(root_.path() / "tiny2");
    nginx_ = std::make_unique<testing::NginxServer>(testing::NginxServer::Options{.root = root_.path()});
  }

  std::string out() const { return (out_.path() / "out").string(); }

  TempDir root_;
  TempDir out_;
  std::unique_ptr<testing::NginxServer> nginx_;
};

TEST_F(CpHttp, APrefixIsCopiedThroughItsIndex) {
  const auto result = run_cli({"cp", "-r", nginx_->base_url() + "/tiny2/", out()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const Names copied{"config.json", "generation_config.json", "model-00001-of-00002.safetensors",
                     "model-00002-of-00002.safetensors", "model.safetensors.index.json",
                     "tokenizer.json"};
  ASSERT_EQ(files_under(out()), copied);
  for (const auto& name : copied) {
    EXPECT_EQ(read_file(fs::path(out()) / name), read_file(root_.path() / "tiny2" / name)) << name;
  }
  const auto weights = run_cli({"cp", "-r", nginx_->base_url() + "/tiny2", out() + "2",
                                "--include", "*.safetensors"});
  ASSERT_EQ(weights.exit_code, 0) << weights.err;
  EXPECT_EQ(files_under(out() + "2"), (Names{"model-00001-of-00002.safetensors",
                                             "model-00002-of-00002.safetensors"}));
  const auto nothing = run_cli({"cp", "-r", nginx_->base_url() + "/nothere/", out() + "3"});
  EXPECT_EQ(nothing.exit_code, 1);
  EXPECT_EQ(nothing.err, "tensorstream: error: " + nginx_->base_url() +
                             "/nothere/: found no model.safetensors.index.json, model.safetensors, "
                             "config.json or other file of a model, and this store cannot list a "
                             "prefix: copy its objects one by one\n");
}

class CpHf : public hf::testing::HfEnvironmentTest {
 protected:
  CpHf() {
    generate_synthetic_model(model_.path(), {.preset = "tiny", .shards = 2, .index = true});
    hub_.commit_directory("acme/tiny", model_.path());
  }

  TempDir model_;
};

// A repository is a prefix, whether its files go to a directory or to the Hugging Face cache.
TEST_F(CpHf, ARepositoryWithoutRecursiveSaysToPassIt) {
  const std::string pass_recursive =
      "tensorstream: error: hf://acme/tiny is a prefix, not an object; pass --recursive (-r) to "
      "copy what is under it\n";
  const auto cache = run_cli({"cp", "hf://acme/tiny", "--to-hf-cache"});
  EXPECT_EQ(cache.exit_code, 2);
  EXPECT_EQ(cache.err, pass_recursive);
  const auto directory = run_cli({"cp", "hf://acme/tiny", (home() / "outx").string()});
  EXPECT_EQ(directory.exit_code, 2);
  EXPECT_EQ(directory.err, pass_recursive);
}

// --to-hf-cache copies through prefetch, where an --exclude wins whatever the order.
TEST_F(CpHf, ToTheHfCacheTakesTheIncludesFirst) {
  const auto result = run_cli({"cp", "-r", "hf://acme/tiny", "--to-hf-cache", "--exclude", "*",
                               "--include", "*.json"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "tensorstream: error: --to-hf-cache applies every --exclude after the "
                        "--include patterns; give the --include patterns first\n");
}

}  // namespace
}  // namespace tensorstream
