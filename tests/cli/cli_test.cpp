// The command-line contract that scripts rely on: output formats, exit status, error lines.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include "base/byte_size.hpp"
#include "cli/shape_json.hpp"
#include "support/child_process.hpp"
#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/sha256.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::ProcessResult;
using testing::run_cli;
using testing::TempDir;
using testing::sha256_hex;
using testing::shape_json;

std::map<std::string, TensorSpec> tiny_tensors() {
  std::map<std::string, TensorSpec> specs;
  for (auto& spec : llama_tensors(synthetic_preset("tiny"))) specs.emplace(spec.name, spec);
  return specs;
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_cli({"gen-model", model_.path().string(), "--preset", "tiny", "--shards", "2"}).exit_code, 0);
  }
  TempDir model_;
};

TEST_F(Cli, StreamJsonPrintsOneExactLinePerTensorThenASummary) {
  const auto result = run_cli({"stream", model_.path().string(), "--json", "--checksum", "sha256",
                           "--chunk-size", "64KiB", "--concurrency", "4"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  const auto specs = tiny_tensors();
  ASSERT_EQ(lines.size(), specs.size() + 1);

  const std::regex tensor_line(
      R"re(\{"name":"([^"]+)","dtype":"BF16","shape":(\[[0-9,]*\]),"bytes":([0-9]+),"sha256":"([0-9a-f]{64})"\})re");
  std::set<std::string> seen;
  for (std::size_t i = 0; i + 1 < lines.size(); ++i) {
    std::smatch match;
    ASSERT_TRUE(std::regex_match(lines[i], match, tensor_line)) << lines[i];
    const auto& spec = specs.at(match[1]);
    EXPECT_EQ(match[2], shape_json(spec.shape));
    const auto bytes = tensor_byte_size(spec);
    EXPECT_EQ(match[3], std::to_string(bytes));
    EXPECT_EQ(match[4], sha256_hex(synthetic_bytes(spec.name, 0, bytes))) << spec.name;
    seen.insert(match[1]);
  }
  EXPECT_EQ(seen.size(), specs.size());

  const std::regex summary(
      R"re(\{"summary":\{"tensors":([0-9]+),"bytes":([0-9]+),"seconds":[0-9.]+,"gb_per_s":[0-9.]+,)re"
      R"re("first_tensor_ms":[0-9.]+,"requests":([0-9]+),"retries":0,"connections":0,)re"
      R"re("peak_memory":([0-9]+),"fresh_memory":[0-9]+,"chunk_size":65536,"concurrency":4,"cpu_seconds":[0-9.]+,)re"
      R"re("io_mode":"(io_uring|pread \([^"]*\))"\}\})re");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(lines.back(), match, summary)) << lines.back();
  EXPECT_EQ(match[1], std::to_string(specs.size()));
  std::uint64_t bytes = 0;
  for (const auto& [name, spec] : specs) bytes += tensor_byte_size(spec);
  EXPECT_EQ(match[2], std::to_string(bytes));
  // Two headers, then reads of at most 64 KiB.
  EXPECT_GE(std::stoull(match[3]), 2 + bytes / (64 * 1024));
  EXPECT_GT(std::stoull(match[4]), 0u);
}

// Scripts read the lines as tensors complete: they must not wait in stdout's buffer, which is a
// block buffer when stdout is a pipe or a file.
TEST(CliStreamJson, EachLineIsWrittenAsItsTensorCompletes) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  const std::string object = testing::read_file(dir.path() / "model.safetensors");
  // The header, then one 64 KiB read at a time: the first read yields tensors, the second hangs.
  testing::FaultServer server("/model.safetensors", object, {.stall_from_request = 3});
  const auto log = dir.path() / "stdout.txt";
  testing::ChildProcess stream(
      {TENSORSTREAM_CLI_PATH, "stream", server.base_url() + "/model.safetensors", "--json",
       "--chunk-size", "64KiB", "--concurrency", "1", "--read-timeout", "120"},
      log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::string text;
  while (text.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline &&
         !stream.exited()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    text = testing::read_text_file(log);
  }
  EXPECT_FALSE(stream.exited()) << "the stream should hang on its stalled read: " << text;
  ASSERT_NE(text.find('\n'), std::string::npos) << "no line while the stream was running";
  EXPECT_TRUE(text.starts_with("{\"name\":\"")) << text;
}

TEST_F(Cli, StreamWithoutJsonPrintsOneSummaryLine) {
  const auto result = run_cli({"stream", "file://" + model_.path().string() + "/"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto lines = lines_of(result.out);
  ASSERT_EQ(lines.size(), 1u) << result.out;
  EXPECT_EQ(lines[0].rfind("streamed " + std::to_string(tiny_tensors().size()) + " tensors", 0), 0u)
      << lines[0];
  // Sizes and rates in the binary units the progress display uses too.
  EXPECT_TRUE(std::regex_search(
      lines[0], std::regex(R"( \(3\.8 MiB\) from .* in [0-9.]+ s: [0-9.]+ (B|KiB|MiB|GiB)/s, )")))
      << lines[0];
}

// A limit below the largest tensor cannot hold; the user who set it hears so once.
TEST_F(Cli, AMemoryLimitBelowTheLargestTensorIsAWarningOnce) {
  std::uint64_t largest_bytes = 0;
  for (const auto& [name, spec] : tiny_tensors()) {
    largest_bytes = std::max<std::uint64_t>(largest_bytes, tensor_byte_size(spec));
  }
  const auto result = run_cli({"stream", model_.path().string(), "--memory-limit", "100KB",
                               "--json", "--checksum", "sha256"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // The first of the largest tensors (two are 512 KiB) is named.
  const std::regex warning("tensorstream: warning: tensor [a-z_.0-9]+ \\(" +
                           std::regex_replace(format_byte_size(largest_bytes), std::regex("\\."),
                                              "\\.") +
                           "\\) is larger than the memory limit \\(97\\.7 KiB\\): tensors that "
                           "large are read one at a time, over the limit\n");
  EXPECT_TRUE(std::regex_match(result.err, warning)) << result.err;
  const auto within = run_cli({"stream", model_.path().string(), "--json"});
  EXPECT_EQ(within.err, "");
}

TEST_F(Cli, InspectJsonReportsEveryTensorWithoutStreaming) {
  const auto result = run_cli({"inspect", model_.path().string(), "--json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\"total_tensors\":" + std::to_string(tiny_tensors().size())),
            std::string::npos);
  EXPECT_NE(result.out.find(R"re("name":"model.norm.weight","dtype":"BF16","shape":[256])re"),
            std::string::npos);
  EXPECT_NE(result.out.find("model-00002-of-00002.safetensors"), std::string::npos);
}

TEST_F(Cli, LsOfADirectoryShowsItsSubdirectoriesAsPrefixes) {
  TempDir root;
  std::filesystem::create_directories(root.path() / "b" / "deeper");
  std::filesystem::create_directory(root.path() / "a");
  std::ofstream(root.path() / "b" / "deeper" / "x.bin") << "12345";
  std::ofstream(root.path() / "top.txt") << "abc";
  const std::string dir = root.path().string();
  const auto result = run_cli({"ls", dir});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "         PRE  " + dir + "/a/\n         PRE  " + dir + "/b/\n" +
                            "           3  " + dir + "/top.txt\n1 object, 3 B; 2 prefixes\n");
  const auto recursive = run_cli({"ls", dir, "--recursive"});
  ASSERT_EQ(recursive.exit_code, 0) << recursive.err;
  EXPECT_EQ(recursive.out, "           5  " + dir + "/b/deeper/x.bin\n           3  " + dir +
                               "/top.txt\n2 objects, 8 B\n");
}

TEST_F(Cli, InspectTablePrintsTotals) {
  const auto result = run_cli({"inspect", model_.path().string()});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("total: " + std::to_string(tiny_tensors().size()) + " tensors"),
            std::string::npos)
      << result.out;
}

TEST_F(Cli, IncludeAndExcludeChooseTheTensorsOfStreamAndInspect) {
  std::set<std::string> expected;
  for (const auto& [name, spec] : tiny_tensors()) {
    if (name.starts_with("model.layers.0.") && name.find("norm") == std::string::npos) {
      expected.insert(name);
    }
  }
  ASSERT_GE(expected.size(), 2u);
  // The pattern before the positional URL: each --include takes one value.
  const auto streamed = run_cli({"stream", "--include", "model.layers.0.*", model_.path().string(),
                                 "--exclude", "*norm*", "--json"});
  ASSERT_EQ(streamed.exit_code, 0) << streamed.err;
  std::set<std::string> names;
  const std::regex name(R"re(^\{"name":"([^"]+)")re");
  for (const auto& line : lines_of(streamed.out)) {
    std::smatch match;
    if (std::regex_search(line, match, name)) names.insert(match[1]);
  }
  EXPECT_EQ(names, expected);
  EXPECT_NE(lines_of(streamed.out).back().find("\"tensors\":" + std::to_string(expected.size())),
            std::string::npos);

  const auto inspected = run_cli({"inspect", model_.path().string(), "--include", "lm_head.weight",
                                  "--include", "model.norm.weight"});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  EXPECT_NE(inspected.out.find("total: 2 tensors"), std::string::npos) << inspected.out;
}

TEST_F(Cli, APatternThatMatchesNothingIsAnError) {
  const auto result = run_cli({"stream", model_.path().string(), "--include", "model.layer.*"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "tensorstream: error: " + model_.path().string() +
                            ": no tensor matches --include 'model.layer.*'\n");
  const auto inspected = run_cli({"inspect", model_.path().string(), "--exclude", "*"});
  EXPECT_EQ(inspected.exit_code, 1);
  EXPECT_EQ(inspected.err, "tensorstream: error: " + model_.path().string() +
                               ": --exclude '*' leaves out every tensor\n");
  const auto empty = run_cli({"stream", model_.path().string(), "--include", ""});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_EQ(empty.err, "tensorstream: error: an empty pattern matches no tensor name\n");
}

TEST(CliErrors, MissingFileExitsNonZeroWithOneLineNamingIt) {
  TempDir dir;
  const auto path = (dir.path() / "nope.safetensors").string();
  const auto result = run_cli({"stream", path});
  EXPECT_EQ(result.exit_code, 1);
  const auto lines = lines_of(result.err);
  ASSERT_EQ(lines.size(), 1u) << result.err;
  EXPECT_EQ(lines[0].rfind("tensorstream: error: " + path, 0), 0u) << lines[0];
  EXPECT_TRUE(result.out.empty());
}

TEST(CliErrors, WrongSchemeExitsWithUsageStatus) {
  const auto result = run_cli({"stream", "ftp://host/model.safetensors"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("unsupported scheme 'ftp'"), std::string::npos) << result.err;
}

// Nothing after "az://" is a container not named yet, which "missing host" would not tell.
TEST(CliErrors, AUrlWithNothingAfterTheSchemeSaysWhatComesFirst) {
  const auto container = run_cli({"ls", "az://"});
  EXPECT_EQ(container.exit_code, 2);
  EXPECT_EQ(container.err, "tensorstream: error: invalid URL 'az://': name a container: "
                           "az://CONTAINER/PATH\n");
  EXPECT_EQ(run_cli({"ls", "gs://"}).err,
            "tensorstream: error: invalid URL 'gs://': name a bucket: gs://BUCKET/PATH\n");
  EXPECT_EQ(run_cli({"stream", "hf://"}).err,
            "tensorstream: error: invalid URL 'hf://': name a repository: "
            "hf://ORG/NAME[@REVISION]/PATH\n");
}

TEST(CliErrors, BadSizeNamesTheOption) {
  const auto result = run_cli({"stream", "/tmp/x.safetensors", "--chunk-size", "12XB"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--chunk-size: invalid size '12XB'"), std::string::npos) << result.err;
}

// 8M is 8 MiB to dd and 8 MB to others: a size flag takes KiB/MiB/GiB or KB/MB/GB, never a guess.
TEST(CliErrors, ASizeWithABarePrefixIsAUsageErrorSpellingBothReadings) {
  const auto chunk = run_cli({"stream", "/tmp/x.safetensors", "--chunk-size", "8M"});
  EXPECT_EQ(chunk.exit_code, 2);
  EXPECT_EQ(chunk.err, "tensorstream: error: --chunk-size: 8M is ambiguous: write 8MiB (8388608 "
                       "bytes) or 8MB (8000000 bytes)\n");
  const auto memory = run_cli({"stream", "/tmp/x.safetensors", "--memory-limit", "1.5g"});
  EXPECT_EQ(memory.exit_code, 2);
  EXPECT_EQ(memory.err, "tensorstream: error: --memory-limit: 1.5g is ambiguous: write 1.5GiB "
                        "(1610612736 bytes) or 1.5GB (1500000000 bytes)\n");
  EXPECT_EQ(run_cli({"stream", "/tmp/nothing-here.safetensors", "--chunk-size", "8MB",
                     "--memory-limit", "1Gi"})
                .exit_code,
            1);
}

// Each chunk is a request: a chunk size of one byte would read a 4 MiB model with four million.
TEST(CliErrors, AChunkSizeBelowTheMinimumIsAUsageErrorSayingWhy) {
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"stream", "/tmp/x.safetensors", "--chunk-size", "1"},
        std::vector<std::string>{"prefetch", "/tmp/x/", "/tmp/y", "--chunk-size", "1"},
        std::vector<std::string>{"bench", "/tmp/x/", "--chunk-size", "1MiB,1"},
        std::vector<std::string>{"shard", "/tmp/x/", "/tmp/y", "--tp", "2", "--chunk-size", "1"}}) {
    const auto result = run_cli(command);
    EXPECT_EQ(result.exit_code, 2) << command[0];
    EXPECT_EQ(result.err, "tensorstream: error: --chunk-size: 1 is below the minimum of 64KiB "
                          "(each chunk is a request of its own)\n")
        << command[0];
  }
  EXPECT_EQ(run_cli({"stream", "/tmp/nothing-here.safetensors", "--chunk-size", "64KiB"}).exit_code,
            1)
      << "64KiB is allowed; the missing file is the error";
}

// The variables stand in for --chunk-size, so they meet its minimum too; a byte per request
// would read a small file with millions of them.
TEST(CliErrors, AChunkSizeFromTheEnvironmentMeetsTheFlagsMinimum) {
  testing::ScopedEnvironment environment({"TENSORSTREAM_CHUNK_SIZE"});
  environment.set("FLYTE_MODEL_LOADER_CHUNK_SIZE", "1");
  const auto result = run_cli({"stream", "/tmp/nothing-here.safetensors"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err, "tensorstream: error: FLYTE_MODEL_LOADER_CHUNK_SIZE='1' is below the "
                        "minimum of 64KiB (each chunk is a request of its own)\n");
  environment.set("TENSORSTREAM_CHUNK_SIZE", "64KiB");
  EXPECT_EQ(run_cli({"stream", "/tmp/nothing-here.safetensors"}).exit_code, 1)
      << "TENSORSTREAM_CHUNK_SIZE beats the other, and 64KiB is allowed";
}

// A value past what can work fails at once, naming the flag, rather than starting tens of
// thousands of threads or saturating to the largest number.
TEST(CliErrors, CountsAboveWhatCanWorkAreUsageErrorsNamingTheFlag) {
  const auto expect_usage = [](const std::vector<std::string>& command, const std::string& why) {
    const auto result = run_cli(command);
    EXPECT_EQ(result.exit_code, 2) << command[0];
    EXPECT_EQ(result.err, "tensorstream: error: " + why + " (see tensorstream " + command[0] +
                              " --help)\n")
        << command[0];
  };
  expect_usage({"stream", "/tmp/x/", "--io-threads", "100000"},
               "--io-threads: 100000 is not between 1 and 1024");
  expect_usage({"bench", "/tmp/x/", "--io-threads", "1025"},
               "--io-threads: 1025 is not between 1 and 1024");
  for (const std::string command : {"stream", "cp", "prefetch"}) {
    std::vector<std::string> arguments{command, "/tmp/x/"};
    if (command != "stream") arguments.push_back("/tmp/y");
    arguments.insert(arguments.end(), {"--concurrency", "99999999999999999999"});
    expect_usage(arguments, "--concurrency: 99999999999999999999 is not between 1 and 4096");
  }
  expect_usage({"shard", "/tmp/x/", "/tmp/y", "--tp", "2", "--concurrency", "4097"},
               "--concurrency: 4097 is not between 1 and 4096");
  expect_usage({"gen-model", "/tmp/y", "--shards", "0"}, "--shards: 0 is not a positive number");
  EXPECT_EQ(run_cli({"stream", "/tmp/nothing-here.safetensors", "--io-threads", "1024",
                     "--concurrency", "4096"})
                .exit_code,
            1)
      << "the limits themselves are allowed; the missing file is the error";
}

TEST(CliErrors, ASizeOrTimeoutOfZeroNamesTheFlagAndWhatItTakes) {
  const auto shard = run_cli({"shard", "/tmp/x/", "/tmp/y", "--tp", "2", "--max-part-size", "0"});
  EXPECT_EQ(shard.exit_code, 2);
  EXPECT_EQ(shard.err, "tensorstream: error: --max-part-size: 0 is not a positive size\n");
  const auto status = run_cli({"status", "/tmp/nothing-here.sock", "--timeout", "0"});
  EXPECT_EQ(status.exit_code, 2);
  EXPECT_EQ(status.err,
            "tensorstream: error: --timeout: 0 is not above 0 and at most 3600 seconds\n");
}

// Messages name the flags a user wrote, not the library's fields.
TEST(CliErrors, RankAndTpMistakesAreUsageErrorsNamingTheFlags) {
  const auto expect_usage = [](const std::vector<std::string>& command, const std::string& why) {
    const auto result = run_cli(command);
    EXPECT_EQ(result.exit_code, 2) << command[0];
    EXPECT_EQ(result.err, "tensorstream: error: " + why + "\n") << command[0];
  };
  for (const std::string command : {"stream", "inspect"}) {
    expect_usage({command, "/tmp/x/", "--rank", "1"},
                 "--rank needs --tp (the tensor-parallel size the rank is one of)");
    expect_usage({command, "/tmp/x/", "--tp", "4", "--rank", "7"},
                 "--rank 7 is outside --tp 4 (ranks 0 to 3)");
  }
  expect_usage({"stream", "/tmp/x/", "--memory-limit", "0"},
               "--memory-limit: 0 is not a positive size");
  for (const std::string command : {"stream", "inspect"}) {
    expect_usage({command, "/tmp/x/", "--tp", "0"},
                 "--tp: 0 is not a positive number (see tensorstream " + command + " --help)");
  }
}

// A checkpoint of no tensors streams, and its summary has no first tensor to time.
TEST(CliErrors, AStreamOfNoTensorsSaysSoWithoutATimeToTheFirst) {
  TempDir dir;
  const auto path = (dir.path() / "empty.safetensors").string();
  {
    std::ofstream file(path, std::ios::binary);
    const std::uint64_t length = 8;
    file.write(reinterpret_cast<const char*>(&length), 8);
    file << "{}      ";
  }
  const auto result = run_cli({"stream", path});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_TRUE(result.out.starts_with("streamed 0 tensors (0 B) from " + path + " in ")) << result.out;
  EXPECT_EQ(result.out.find("first tensor"), std::string::npos) << result.out;
  EXPECT_TRUE(result.out.ends_with(" 0 retries, peak memory 0 B]\n")) << result.out;
}

TEST(CliErrors, MalformedHeaderIsOneLineNamingTheFile) {
  TempDir dir;
  const auto path = (dir.path() / "bad.safetensors").string();
  std::FILE* file = std::fopen(path.c_str(), "wb");
  const std::uint64_t length = 4;
  std::fwrite(&length, 8, 1, file);
  std::fputs("{oops", file);
  std::fclose(file);
  const auto result = run_cli({"stream", path});
  EXPECT_EQ(result.exit_code, 1);
  ASSERT_EQ(lines_of(result.err).size(), 1u) << result.err;
  EXPECT_NE(result.err.find(path), std::string::npos) << result.err;
}

TEST(CliErrors, Http404IsOneLineNamingTheUrl) {
  if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  TempDir root;
  testing::NginxServer nginx({.root = root.path()});
  const auto url = nginx.base_url() + "/missing/model.safetensors";
  const auto result = run_cli({"stream", url});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.err, "tensorstream: error: " + url + ": HTTP 404 Not Found\n");
}

// nginx answers a directory named without its slash with a 301 to the name with it, and then with
// an index page: neither is a model, and the fix is one character.
TEST(CliErrors, AnHttpDirectoryWithoutItsSlashSaysToAddIt) {
  if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  TempDir root;
  generate_synthetic_model(root.path() / "tiny", {.preset = "tiny"});
  testing::NginxServer nginx({.root = root.path()});
  const auto url = nginx.base_url() + "/tiny";
  for (const std::string command : {"stream", "inspect"}) {
    const auto result = run_cli({command, url});
    EXPECT_EQ(result.exit_code, 2) << command;
    EXPECT_EQ(result.err, "tensorstream: error: " + url + ": a directory (the server redirects to " +
                              url + "/); add a trailing slash to stream what it holds\n")
        << command;
  }
  EXPECT_EQ(run_cli({"stream", url + "/"}).exit_code, 0);
}

TEST(CliUsage, ABareCommandShowsTheCommandsAsAUsageError) {
  const auto result = run_cli({});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.out, "");
  for (const std::string command : {"stream", "serve", "reload", "-v,--verbose", "-q,--quiet"}) {
    EXPECT_NE(result.err.find("  " + command), std::string::npos) << result.err;
  }
  EXPECT_NE(result.err.find("\nUsage: tensorstream [OPTIONS] SUBCOMMAND\n"), std::string::npos)
      << result.err;
}

TEST(CliUsage, AMistypedOrMissingCacheCommandPointsAtTheCacheCommands) {
  const auto mistyped = run_cli({"cache", "lss", "--cache", "/tmp/x"});
  EXPECT_EQ(mistyped.exit_code, 2);
  EXPECT_EQ(mistyped.err, "tensorstream: error: unknown command 'cache lss' (did you mean 'ls'?)\n");
  const auto missing = run_cli({"cache"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err,
            "tensorstream: error: A subcommand is required (see tensorstream cache --help)\n");
  const auto flag = run_cli({"cache", "ls", "--jsn"});
  EXPECT_EQ(flag.exit_code, 2);
  EXPECT_EQ(flag.err, "tensorstream: error: The following argument was not expected: --jsn (did "
                      "you mean --json?)\n");
}

TEST(CliUsage, EveryCommandsHelpMentionsTheGlobalFlags) {
  for (const std::string command : {"stream", "inspect", "ls", "bench", "prefetch", "shard",
                                    "partition", "serve", "attach", "status", "reload"}) {
    const auto result = run_cli({command, "--help"});
    EXPECT_EQ(result.exit_code, 0) << command;
    EXPECT_NE(result.out.find("Every command also takes -v (-vv: every HTTP request) and -q"),
              std::string::npos)
        << command;
  }
}

// CLI11's own exit codes (105, 106, 109) and multi-line texts were what a typo used to give.
TEST(CliUsage, ParseErrorsAreOneLineUsageErrorsWithExitStatus2) {
  for (const std::vector<std::string>& arguments :
       {std::vector<std::string>{"strem", "x"}, {"stream", "x", "--no-such-flag"},
        {"stream", "x", "--concurrency", "many"}, {"stream", "x", "--concurrency", "1.5"}}) {
    const auto result = run_cli(arguments);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_TRUE(result.err.starts_with("tensorstream: error: ")) << result.err;
    EXPECT_TRUE(result.err.ends_with(" --help)\n") ||
                result.err.ends_with("?)\n"))
        << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.out, "");
  }
  EXPECT_EQ(run_cli({"strem", "x"}).err,
            "tensorstream: error: unknown command 'strem' (did you mean 'stream'?)\n");
  EXPECT_EQ(run_cli({"stream", "x", "--chunksize", "4MiB"}).err,
            "tensorstream: error: The following arguments were not expected: 4MiB --chunksize "
            "(did you mean --chunk-size?)\n");
  EXPECT_EQ(run_cli({"ls", "s3://models/", "--endpoint", "http://127.0.0.1:9"}).err,
            "tensorstream: error: The following arguments were not expected: "
            "http://127.0.0.1:9 --endpoint (did you mean --endpoint-url?)\n");
  EXPECT_EQ(run_cli({"stream", "x", "--concurrency", "0"}).err,
            "tensorstream: error: --concurrency: 0 is not between 1 and 4096 (see tensorstream "
            "stream --help)\n");
  EXPECT_EQ(run_cli({"partition", "a", "b", "--tp", "2,x"}).err,
            "tensorstream: error: --tp: 'x' is not a number (see tensorstream partition "
            "--help)\n");
  // The example in docs/cli.md.
  EXPECT_EQ(run_cli({"stream", "x", "--no-such-flag"}).err,
            "tensorstream: error: The following argument was not expected: --no-such-flag (see "
            "tensorstream stream --help)\n");
  const auto version = run_cli({"--version"});
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_TRUE(std::regex_match(version.out, std::regex("tensorstream 0\\.1\\.0( \\([^)]+\\))?\n")))
      << version.out;
  const auto help = run_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("serve"), std::string::npos) << help.out;
}

TEST(CliGenModel, UnknownPresetIsRejected) {
  TempDir dir;
  const auto result = run_cli({"gen-model", dir.path().string(), "--preset", "huge"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("huge"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace tensorstream
