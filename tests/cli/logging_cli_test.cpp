// What the tool says on stderr besides errors: retries at the default level, -v/-vv for the
// choices made and every request, -q for errors only, and TENSORSTREAM_LOG checked.

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using testing::FaultServer;
using testing::lines_of;
using testing::run_cli;
using testing::TempDir;

std::string tiny_model_bytes(const TempDir& dir) {
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  return testing::read_file(dir.path() / "model.safetensors");
}

std::vector<std::string> lines_matching(const std::string& text, const std::regex& pattern) {
  std::vector<std::string> matching;
  for (const auto& line : lines_of(text)) {
    if (std::regex_match(line, pattern)) matching.push_back(line);
  }
  return matching;
}

TEST(CliLogging, EachRetryIsAWarningNamingTheObjectAndCause) {
  FaultServer server("/model.safetensors", "x",
                     {.fail_first = FaultServer::always, .fail_status = 500});
  const std::string url = server.base_url() + "/model.safetensors";
  const auto result = run_cli({"inspect", url, "--retries", "2"});
  EXPECT_EQ(result.exit_code, 1);
  const auto lines = lines_of(result.err);
  ASSERT_EQ(lines.size(), 3u) << result.err;
  const std::string warning =
      "tensorstream: warning: " + url + ": HTTP 500 Internal Server Error; retrying in ";
  EXPECT_EQ(lines[0].rfind(warning, 0), 0u) << lines[0];
  EXPECT_TRUE(lines[0].ends_with(" s (attempt 2 of 3)")) << lines[0];
  EXPECT_EQ(lines[1].rfind(warning, 0), 0u) << lines[1];
  EXPECT_TRUE(lines[1].ends_with(" s (attempt 3 of 3)")) << lines[1];
  EXPECT_EQ(lines[2].rfind("tensorstream: error: " + url + ": HTTP 500", 0), 0u) << lines[2];
}

TEST(CliLogging, QuietLeavesOnlyTheError) {
  FaultServer server("/model.safetensors", "x",
                     {.fail_first = FaultServer::always, .fail_status = 500});
  const auto result =
      run_cli({"inspect", server.base_url() + "/model.safetensors", "--retries", "1", "-q"});
  EXPECT_EQ(result.exit_code, 1);
  ASSERT_EQ(lines_of(result.err).size(), 1u) << result.err;
  EXPECT_EQ(result.err.rfind("tensorstream: error: ", 0), 0u) << result.err;
}

TEST(CliLogging, VeryVerboseTracesEveryRequestWithRangeStatusAndTime) {
  TempDir dir;
  FaultServer server("/model.safetensors", tiny_model_bytes(dir), {});
  const std::string url = server.base_url() + "/model.safetensors";
  const auto result = run_cli({"stream", url, "--chunk-size", "1MiB", "-vv"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::regex request("tensorstream: trace: (HEAD|GET) " +
                           std::regex_replace(url, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                           R"(( bytes=\d+-\d+)?: HTTP (200|206) in \d+\.\d{3} s)");
  const auto traced = lines_matching(result.err, request);
  EXPECT_EQ(static_cast<int>(traced.size()), server.requests()) << result.err;
  const std::regex connected("tensorstream: debug: connected to 127\\.0\\.0\\.1:\\d+");
  EXPECT_GE(lines_matching(result.err, connected).size(), 1u) << result.err;
}

TEST(CliLogging, VerboseIsAcceptedBeforeOrAfterTheCommand) {
  TempDir dir;
  FaultServer server("/model.safetensors", tiny_model_bytes(dir), {});
  const std::string url = server.base_url() + "/model.safetensors";
  for (const auto& arguments : {std::vector<std::string>{"-v", "inspect", url},
                                std::vector<std::string>{"inspect", url, "--verbose"}}) {
    const auto result = run_cli(arguments);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.err.find("tensorstream: debug: connected to 127.0.0.1:"), std::string::npos)
        << result.err;
    EXPECT_EQ(result.err.find("tensorstream: trace:"), std::string::npos) << result.err;
  }
}

TEST(CliLogging, S3EndpointAndCredentialSourceAreDebugMessages) {
  testing::ScopedEnvironment environment;
  environment.set("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE");
  environment.set("AWS_SECRET_ACCESS_KEY", "secret");
  environment.set("AWS_REGION", "eu-west-1");
  // Nothing listens on port 9: the choices are logged before the first request fails.
  const auto result = run_cli({"inspect", "s3://models/m.safetensors", "--endpoint-url",
                               "http://127.0.0.1:9", "--retries", "0", "-v"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("tensorstream: debug: s3://models: endpoint http://127.0.0.1:9/models "
                            "(path-style, region eu-west-1)\n"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("tensorstream: debug: AWS credentials from environment\n"),
            std::string::npos)
      << result.err;
}

TEST(CliLogging, AnUnknownLogLevelInTheEnvironmentIsAUsageError) {
  testing::ScopedEnvironment environment;
  environment.set("TENSORSTREAM_LOG", "verbose");
  const auto result = run_cli({"inspect", "/nonexistent.safetensors"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(result.err,
            "tensorstream: error: TENSORSTREAM_LOG=verbose is not a log level (trace, debug, info, "
            "warning, error or off)\n");
}

TEST(CliLogging, TheEnvironmentSetsTheLevelWhenNoFlagDoes) {
  testing::ScopedEnvironment environment;
  environment.set("TENSORSTREAM_LOG", "error");
  FaultServer server("/model.safetensors", "x",
                     {.fail_first = FaultServer::always, .fail_status = 500});
  const auto result =
      run_cli({"inspect", server.base_url() + "/model.safetensors", "--retries", "1"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
}

TEST(CliLogging, QuietAndVerboseTogetherAreAUsageError) {
  const auto result = run_cli({"inspect", "/m.safetensors", "-q", "-v"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_EQ(lines_of(result.err).size(), 1u) << result.err;
  EXPECT_EQ(result.err.rfind("tensorstream: error: ", 0), 0u) << result.err;
}

}  // namespace
}  // namespace tensorstream
