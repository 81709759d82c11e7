// --progress: what the long commands write to stderr while they work, and that stdout stays as
// it was.

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <thread>

#include "support/child_process.hpp"
#include "support/fault_server.hpp"
#include "support/held_read_server.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream {
namespace {

using testing::lines_of;
using testing::run_cli;
using testing::TempDir;

class ProgressCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_cli({"gen-model", model_.path().string(), "--preset", "tiny"}).exit_code, 0);
  }
  TempDir model_;
};

// What a bar drawn into a pipe left: the lines it drew over each other, escapes removed.
std::vector<std::string> redrawn_lines(const std::string& err) {
  std::vector<std::string> lines;
  std::size_t at = 0;
  while ((at = err.find('\r', at)) != std::string::npos) {
    const auto end = err.find("\033[K", at);
    if (end == std::string::npos) break;
    lines.push_back(err.substr(at + 1, end - at - 1));
    at = end;
  }
  return lines;
}

TEST_F(ProgressCli, NeverAndJsonLeaveStderrEmpty) {
  for (const std::vector<std::string>& flags :
       {std::vector<std::string>{"--progress", "never"}, {"--progress", "auto", "--json"}}) {
    std::vector<std::string> arguments{"stream", model_.path().string()};
    arguments.insert(arguments.end(), flags.begin(), flags.end());
    const auto result = run_cli(arguments);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.err, "") << flags.back();
  }
}

TEST_F(ProgressCli, AlwaysDrawsTheBarIntoAPipeFittedToColumnsAndEndsItsLine) {
  for (const int columns : {60, 120}) {
    testing::ScopedEnvironment environment;
    environment.set("COLUMNS", std::to_string(columns));
    const auto result = run_cli({"stream", model_.path().string(), "--progress", "always"});
    ASSERT_EQ(result.exit_code, 0) << result.err;
    ASSERT_TRUE(result.err.ends_with("\033[K\n")) << result.err;
    EXPECT_EQ(lines_of(result.err).size(), 1u) << "every redraw stays on one line";
    const auto drawn = redrawn_lines(result.err);
    ASSERT_FALSE(drawn.empty()) << result.err;
    for (const auto& line : drawn) {
      EXPECT_LT(line.size(), static_cast<std::size_t>(columns)) << line;
    }
    // The tiny preset's 21 tensors, 3.8 MiB; at 60 columns the tensor count does not fit.
    const std::string tensors = columns == 60 ? "" : ", 21/21 tensors";
    EXPECT_TRUE(std::regex_match(
        drawn.back(), std::regex("tensorstream: 3\\.8 MiB in [0-9]+\\.[0-9] s, average "
                                 "([0-9.]+ (B|KiB|MiB|GiB)|-- B)/s" + tensors)))
        << drawn.back();
    // Stdout is what it is without a bar.
    EXPECT_EQ(lines_of(result.out).size(), 1u) << result.out;
    EXPECT_TRUE(result.out.starts_with("streamed 21 tensors (3.8 MiB)")) << result.out;
  }
}

TEST(ProgressCliErrors, AFailureLeavesOnlyItsErrorLine) {
  TempDir dir;
  const auto path = (dir.path() / "nope.safetensors").string();
  const auto result = run_cli({"stream", path, "--progress", "always"});
  EXPECT_EQ(result.exit_code, 1);
  // A bar drawn before the failure is erased: what is left on the screen is the error line.
  const auto erased = result.err.rfind("\033[K");
  const std::string shown = erased == std::string::npos ? result.err : result.err.substr(erased + 3);
  EXPECT_TRUE(shown.starts_with("tensorstream: error: " + path)) << result.err;
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
}

TEST(ProgressCliUsage, AnUnknownModeIsAUsageError) {
  const auto result = run_cli({"stream", "/tmp/x.safetensors", "--progress", "bogus"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: --progress: 'bogus' is not auto, always or never (see "
            "tensorstream stream --help)\n");
  EXPECT_EQ(result.out, "");
}

// One tensor of 256 KiB whose one read the server sends half of, then holds until the test has
// seen a plain progress line: a line comes every 5 s, whatever the machine's speed.
TEST(ProgressCliLog, WithoutATerminalPlainLinesComeWhileTheStreamRuns) {
  TempDir dir;
  constexpr std::uint64_t tensor_bytes = 256 * 1024;
  constexpr std::uint64_t sent = 100000;
  const auto held_server = testing::serve_one_tensor_holding_its_read(dir.path(), tensor_bytes, sent);
  testing::FaultServer& server = *held_server;

  const auto log = dir.path() / "output.txt";
  testing::ChildProcess stream({TENSORSTREAM_CLI_PATH, "stream",
                                server.base_url() + "/one.safetensors", "--chunk-size", "1MiB",
                                "--read-timeout", "120"},
                               log);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string text;
  while (text.find("tensorstream: ") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline && !stream.exited()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    text = testing::read_text_file(log);
  }
  server.resume();
  const int status = stream.wait();
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << testing::read_text_file(log);

  text = testing::read_text_file(log);
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << text;
  const auto lines = lines_of(text);
  ASSERT_GE(lines.size(), 3u) << text;
  // 100000 of 262144 bytes landed: the count moves within a read, not per finished read.
  const std::regex held(
      "tensorstream: 97\\.7 KiB / 256\\.0 KiB \\(38%\\), [0-9.]+ (B|KiB)/s, ETA [0-9a-z-]+, "
      "0/1 tensors");
  EXPECT_TRUE(std::regex_match(lines[0], held)) << lines[0];
  // On a slow machine a line may fall between the resumption and the end.
  const std::regex plain("tensorstream: [0-9.]+ (B|KiB) / 256\\.0 KiB \\([0-9]+%\\), .*");
  for (std::size_t i = 1; i + 2 < lines.size(); ++i) {
    EXPECT_TRUE(std::regex_match(lines[i], plain)) << lines[i];
  }
  EXPECT_TRUE(std::regex_match(
      lines[lines.size() - 2],
      std::regex("tensorstream: 256\\.0 KiB in [0-9]+\\.[0-9] s, average [0-9.]+ (B|KiB)/s, "
                 "1/1 tensors")))
      << lines[lines.size() - 2];
  EXPECT_TRUE(lines.back().starts_with("streamed 1 tensor (256.0 KiB) from ")) << lines.back();
}

// A server that takes the request and never answers: after 2 s the bar says what the stream waits
// for instead of a rate of nothing, until the response timeout ends the wait.
TEST(ProgressCliWaiting, ASilentServerIsNamedWithTheSecondsWaited) {
  testing::FaultServer server("/model.safetensors", "x", {.silent_from_request = 0});
  const auto result = run_cli({"stream", server.base_url() + "/model.safetensors", "--progress",
                               "always", "--retries", "0", "--response-timeout", "2.5"});
  EXPECT_EQ(result.exit_code, 1);
  const std::string url = server.base_url() + "/model.safetensors";
  const std::string waiting =
      "0 B  waiting for a response from 127.0.0.1:" + std::to_string(server.port()) + " (2 s)";
  auto lines = redrawn_lines(result.err);
  // The last redraw is the erasure before the error line.
  ASSERT_GE(lines.size(), 2u) << result.err;
  EXPECT_EQ(lines.back(), "");
  lines.pop_back();
  EXPECT_EQ(lines.back(), waiting) << result.err;
  EXPECT_TRUE(lines.front() == "0 B  -- B/s" || lines.front() == "0 B  0 B/s") << result.err;
  EXPECT_TRUE(result.err.ends_with(
      "\r\033[Ktensorstream: error: " + url + ": no response for 2500 ms (after 1 attempt)\n"))
      << result.err;
}

// A run against a server that never answers, with --response-timeout 4.5 and no retries: the bar
// named the server and the seconds waited before the run failed.
void expect_a_named_wait(const testing::ProcessResult& result, std::uint16_t port) {
  EXPECT_EQ(result.exit_code, 1) << result.err;
  // "0 B", or "0 B / 3.8 MiB  0%" where the run knows its size before it waits.
  const std::regex waiting("0 B(  | / .*  )waiting for a response from 127\\.0\\.0\\.1:" +
                           std::to_string(port) + " \\([234] s\\)");
  const auto lines = redrawn_lines(result.err);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(),
                          [&](const std::string& line) { return std::regex_match(line, waiting); }))
      << result.err;
  EXPECT_TRUE(result.err.ends_with(": no response for 4500 ms (after 1 attempt)\n")) << result.err;
}

// `COMMAND MODEL DESTINATION --tp 1` into an S3 endpoint that takes the listing which checks the
// destination is empty, and never answers it.
void expect_a_named_wait_for_the_destination(const std::string& command,
                                             const std::filesystem::path& model,
                                             const std::string& destination) {
  testing::FaultServer server("/models", "", {.silent_from_request = 0});
  testing::ScopedEnvironment environment;
  environment.set("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE");
  environment.set("AWS_SECRET_ACCESS_KEY", "secret");
  environment.set("AWS_REGION", "us-east-1");
  const auto result = run_cli({command, model.string(), destination, "--tp", "1", "--endpoint-url",
                               server.base_url(), "--progress", "always", "--retries", "0",
                               "--response-timeout", "4.5"});
  expect_a_named_wait(result, server.port());
}

// partition and shard say the same of their destination.
TEST_F(ProgressCli, PartitionNamesTheServerItWaitsFor) {
  expect_a_named_wait_for_the_destination("partition", model_.path(), "s3://models/raw/");
}

TEST_F(ProgressCli, ShardNamesTheServerItWaitsFor) {
  expect_a_named_wait_for_the_destination("shard", model_.path(), "s3://models/shards/");
}

// And serve, of the source it loads.
TEST(ProgressCliWaiting, ServeNamesTheServerItWaitsFor) {
  testing::FaultServer server("/model.safetensors", "x", {.silent_from_request = 0});
  TempDir dir;
  const auto result = run_cli({"serve", server.base_url() + "/model.safetensors", "--tp", "1",
                               "--socket", (dir.path() / "store.sock").string(), "--progress",
                               "always", "--retries", "0", "--response-timeout", "4.5"});
  expect_a_named_wait(result, server.port());
}

TEST_F(ProgressCli, PartitionAndServeTakeTheFlagToo) {
  TempDir out;
  const auto result = run_cli({"partition", model_.path().string(), (out.path() / "raw").string(),
                               "--tp", "1", "--progress", "never"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const auto serve = run_cli({"serve", "x", "--tp", "1", "--socket", "s", "--progress", "x"});
  EXPECT_EQ(serve.exit_code, 2);
  EXPECT_EQ(serve.err,
            "tensorstream: error: --progress: 'x' is not auto, always or never (see "
            "tensorstream serve --help)\n");
}

}  // namespace
}  // namespace tensorstream
