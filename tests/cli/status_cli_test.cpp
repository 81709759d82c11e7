// `tensorstream status SOCKET`: what a store server serves, read from its status reply.
#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>
#include <regex>
#include <string>

#include "store/served_model.hpp"
#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/store/attached_rank.hpp"

namespace tensorstream::cli {
namespace {

using testing::run_cli;
using testing::TempDir;

class StatusCli : public ::testing::Test {
 protected:
  std::filesystem::path socket() const { return dir_.path() / "store.sock"; }

  store::StoreServerOptions options() const {
    store::StoreServerOptions options;
    options.tensor_parallel_size = 2;
    options.socket.path = socket();
    return options;
  }

  TempDir dir_;
};

TEST_F(StatusCli, ShowsEachRanksStateBytesAndAttaches) {
  generate_synthetic_model(dir_.path() / "model", {.preset = "tiny"});
  const std::string source = (dir_.path() / "model").string();
  store::testing::ServedModel served(source, options());
  served.load();
  const store::AttachedRank held = store::attach(socket(), 1);
  const auto human = run_cli({"status", socket().string()});
  EXPECT_EQ(human.exit_code, 0) << human.err;
  EXPECT_EQ(human.err, "");
  const std::regex expected(socket().string() + ": serving " + source + " at tp 2, pid " +
                            std::to_string(::getpid()) +
                            ", up [0-9]+ s\n"
                            "rank 0: ready, 1\\.9 MiB of 1\\.9 MiB, 0 workers attached, "
                            "0 waiting\n"
                            "rank 1: ready, 1\\.9 MiB of 1\\.9 MiB, 1 worker attached, "
                            "0 waiting\n");
  EXPECT_TRUE(std::regex_match(human.out, expected)) << human.out;

  const auto json = run_cli({"status", socket().string(), "--json"});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(json.out.substr(0, json.out.find("\"uptime_seconds\"")),
            "{\"source\":\"" + source + "\",\"tp\":2,\"generation\":1,\"pid\":" + std::to_string(::getpid()) + ",");
  EXPECT_NE(json.out.find("{\"rank\":1,\"state\":\"ready\",\"bytes\":1976832,"
                          "\"bytes_loaded\":1976832,\"attaches\":1,\"attached\":1,\"waiting\":0}"),
            std::string::npos)
      << json.out;
}

// A worker is counted while its process maps the rank: not once per reply, and not after it
// let go or exited. A generation a reload replaced is listed while a worker still maps it.
TEST_F(StatusCli, CountsTheWorkersThatStillMapARankAndTheOldGenerationsTheyHold) {
  generate_synthetic_model(dir_.path() / "model", {.preset = "tiny"});
  const std::string source = (dir_.path() / "model").string();
  store::testing::ServedModel served(source, options());
  served.load();
  std::optional<store::AttachedRank> held = store::attach(socket(), 0);
  store::attach(socket(), 0);
  ASSERT_EQ(run_cli({"attach", socket().string(), "--rank", "0"}).exit_code, 0);
  const auto attached = run_cli({"status", socket().string(), "--json"});
  EXPECT_NE(attached.out.find("{\"rank\":0,\"state\":\"ready\",\"bytes\":1976832,"
                              "\"bytes_loaded\":1976832,\"attaches\":3,\"attached\":1,"
                              "\"waiting\":0}"),
            std::string::npos)
      << attached.out;

  served.reload();
  const auto reloaded = run_cli({"status", socket().string()});
  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.err;
  EXPECT_TRUE(reloaded.out.ends_with("\nrank 0: ready, 1.9 MiB of 1.9 MiB, 0 workers attached, 0 "
                                     "waiting\nrank 1: ready, 1.9 MiB of 1.9 MiB, 0 workers "
                                     "attached, 0 waiting\ngeneration 1 of " + source +
                                     " still held: rank 0 by 1 worker\n"))
      << reloaded.out;
  const auto json = run_cli({"status", socket().string(), "--json"});
  EXPECT_NE(json.out.find(",\"held\":[{\"generation\":1,\"source\":\"" + source +
                          "\",\"ranks\":[{\"rank\":0,\"attached\":1}]}]"),
            std::string::npos)
      << json.out;

  held.reset();
  const auto released = run_cli({"status", socket().string(), "--json"});
  EXPECT_EQ(released.out.find("\"held\""), std::string::npos) << released.out;
}

TEST_F(StatusCli, AFailedRankSaysWhy) {
  store::testing::ServedModel served((dir_.path() / "missing").string(), options());
  EXPECT_ANY_THROW(served.load());
  const auto result = run_cli({"status", socket().string()});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("\nrank 0: failed: " + (dir_.path() / "missing").string()),
            std::string::npos)
      << result.out;
}

TEST_F(StatusCli, NoServerIsAOneLineError) {
  const auto result = run_cli({"status", socket().string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err, "tensorstream: error: " + socket().string() +
                            ": no server is listening (no socket file)\n");
}

}  // namespace
}  // namespace tensorstream::cli
