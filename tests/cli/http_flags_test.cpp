// The HTTP client's flags, which every command that reads storage takes.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/fault_server.hpp"
#include "support/process.hpp"

namespace tensorstream {
namespace {

using testing::FaultServer;
using testing::run_cli;

TEST(CliHttpFlags, EveryStorageCommandTakesThem) {
  for (const std::string command : {"stream", "inspect", "ls", "prefetch", "shard"}) {
    const auto result = run_cli({command, "--help"});
    EXPECT_EQ(result.exit_code, 0) << command << ": " << result.err;
    for (const std::string flag : {"--retries", "--connect-timeout", "--timeout"}) {
      EXPECT_NE(result.out.find(flag), std::string::npos) << command << " lacks " << flag;
    }
  }
}

TEST(CliHttpFlags, RetriesSetTheNumberOfAttempts) {
  FaultServer server("/model.safetensors", "x",
                     {.fail_first = FaultServer::always, .fail_status = 500});
  const auto result =
      run_cli({"stream", server.base_url() + "/model.safetensors", "--retries", "2"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("HTTP 500 Internal Server Error (after 3 attempts)"), std::string::npos)
      << result.err;
  EXPECT_EQ(server.requests(), 3);
}

TEST(CliHttpFlags, TimeoutBoundsAStalledResponse) {
  FaultServer server("/model.safetensors", std::string(1000, 'x'), {.stall = true});
  const auto result = run_cli(
      {"stream", server.base_url() + "/model.safetensors", "--retries", "0", "--timeout", "0.05"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("no data for 50 ms"), std::string::npos) << result.err;
}

TEST(CliHttpFlags, NegativeRetriesAreRejected) {
  const auto result = run_cli({"stream", "http://127.0.0.1:1/m.safetensors", "--retries", "-1"});
  EXPECT_NE(result.exit_code, 0);
  EXPECT_NE(result.err.find("--retries"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace tensorstream
