// `tensorstream stream --world-size N --rank R --rendezvous tcp://...`: whole processes streaming
// one checkpoint together over a c10d group, against nginx (whose access log counts what it
// served) and s3rver.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "storage/s3rver_test.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

using namespace std::chrono_literals;
using testing::ChildProcess;
using testing::lines_of;
using testing::NginxServer;
using testing::run_cli;
using testing::sorted_tensor_lines;
using testing::summary_value;
using testing::TempDir;

// One `stream` process per rank, started together; stdout and stderr of each in a log.
class Ranks {
 public:
  // Starts ranks 0 to `started` - 1 of the world (all of them by default).
  Ranks(const TempDir& logs, int world, const std::vector<std::string>& arguments,
        const std::vector<std::vector<std::string>>& per_rank = {}, int started = -1)
      : logs_(logs.path()), port_(testing::pick_free_port()) {
    for (int rank = 0; rank < (started < 0 ? world : started); ++rank) {
      std::vector<std::string> argv = {TENSORSTREAM_CLI_PATH, "stream"};
      argv.insert(argv.end(), arguments.begin(), arguments.end());
      if (!per_rank.empty()) {
        const auto& extra = per_rank[static_cast<std::size_t>(rank)];
        argv.insert(argv.end(), extra.begin(), extra.end());
      }
      for (const std::string& flag :
           {std::string("--world-size"), std::to_string(world), std::string("--rank"),
            std::to_string(rank), std::string("--rendezvous"),
            "tcp://127.0.0.1:" + std::to_string(port_)}) {
        argv.push_back(flag);
      }
      processes_.push_back(std::make_unique<ChildProcess>(argv, log(rank)));
    }
  }

  std::filesystem::path log(int rank) const {
    return logs_ / ("rank" + std::to_string(rank) + ".log");
  }
  std::string output(int rank) const { return testing::read_text_file(log(rank)); }
  ChildProcess& process(int rank) { return *processes_[static_cast<std::size_t>(rank)]; }

  // Waits for every rank; their exit codes.
  std::vector<int> wait() {
    std::vector<int> codes;
    for (auto& process : processes_) {
      const int status = process->wait();
      codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
    return codes;
  }

 private:
  std::filesystem::path logs_;
  std::uint16_t port_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
};

// The JSON tensor lines of a rank's output, sorted, without the summary.
std::vector<std::string> rank_tensor_lines(const std::string& output) {
  std::vector<std::string> lines;
  for (const auto& line : lines_of(output)) {
    if (line.rfind("{\"name\":", 0) == 0) lines.push_back(line);
  }
  std::sort(lines.begin(), lines.end());
  return lines;
}

class DistributedCli : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model(models_.path() / "small", {.preset = "tiny"});
  }

  std::string model_file() const {
    return (models_.path() / "small" / "model.safetensors").string();
  }

  // nginx serving the models with its access log on.
  std::unique_ptr<NginxServer> start_nginx(const std::string& extra = "") {
    if (!NginxServer::available()) return nullptr;
    return std::make_unique<NginxServer>(NginxServer::Options{
        .root = models_.path(),
        .extra_config = "access_log " + (logs_.path() / "access.log").string() + ";" + extra});
  }

  // The model's rank files for tensor-parallel size 2 (`tensorstream shard`), under the prefix
  // returned; "" (and a test failure) when sharding failed.
  std::string shard_for_two_ranks() {
    const auto sharded = run_cli({"shard", (models_.path() / "small").string() + "/",
                                  (models_.path() / "tp").string(), "--tp", "2"});
    EXPECT_EQ(sharded.exit_code, 0) << sharded.err;
    return sharded.exit_code == 0 ? (models_.path() / "tp").string() + "/" : "";
  }

  // N ranks over nginx: each prints exactly what one stream alone prints, and nginx serves each
  // tensor's bytes once in all (plus one header per rank).
  void expect_read_once_over_nginx(int world) {
    auto nginx = start_nginx();
    if (!nginx) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    const std::string url = nginx->base_url() + "/small/model.safetensors";
    std::vector<std::string> flags = {url, "--json", "--checksum", "sha256", "--chunk-size",
                                      "64KiB"};
    std::vector<std::string> alone_arguments = {"stream"};
    alone_arguments.insert(alone_arguments.end(), flags.begin(), flags.end());
    const auto alone = run_cli(alone_arguments);
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    const std::uint64_t alone_served = testing::served_bytes(logs_.path() / "access.log");
    const std::uint64_t tensor_bytes = summary_value(alone.out, "bytes");
    ASSERT_GT(alone_served, tensor_bytes);

    flags.insert(flags.end(), {"--group-timeout", "30"});
    Ranks ranks(logs_, world, flags);
    const auto codes = ranks.wait();
    std::uint64_t fetched = 0;
    for (int rank = 0; rank < world; ++rank) {
      ASSERT_EQ(codes[static_cast<std::size_t>(rank)], 0) << ranks.output(rank);
      const std::string output = ranks.output(rank);
      EXPECT_EQ(rank_tensor_lines(output), sorted_tensor_lines(alone.out)) << "rank " << rank;
      EXPECT_EQ(summary_value(output, "group_size"), world);
      fetched += summary_value(output, "bytes") - summary_value(output, "broadcast_bytes");
    }
    EXPECT_EQ(fetched, tensor_bytes);
    const std::uint64_t header_bytes = alone_served - tensor_bytes;
    EXPECT_EQ(testing::served_bytes(logs_.path() / "access.log") - alone_served,
              tensor_bytes + world * header_bytes);
  }

  // `stream MODEL ARGUMENTS...` is a usage error: exit status 2 and the one line `message`.
  void expect_usage_error(const std::vector<std::string>& arguments, const std::string& message) {
    std::vector<std::string> command = {"stream", model_file()};
    command.insert(command.end(), arguments.begin(), arguments.end());
    const auto result = run_cli(command);
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_EQ(result.err, "tensorstream: error: " + message + "\n");
  }

  TempDir models_;
  TempDir logs_;
};

TEST_F(DistributedCli, TwoRanksOverNginxPrintTheStreamAndReadItOnce) {
  expect_read_once_over_nginx(2);
}

TEST_F(DistributedCli, FourRanksOverNginxPrintTheStreamAndReadItOnce) {
  expect_read_once_over_nginx(4);
}

TEST_F(DistributedCli, RanksOfANodeShareACacheAndTheNextRunFetchesNothing) {
  auto nginx = start_nginx();
  if (!nginx) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  TempDir cache;
  testing::age_files(models_.path() / "small");
  const auto alone = run_cli({"stream", model_file(), "--json", "--checksum", "sha256"});
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  const std::vector<std::string> flags = {
      nginx->base_url() + "/small/model.safetensors", "--json", "--checksum", "sha256",
      "--chunk-size", "64KiB", "--group-timeout", "30", "--cache", cache.path().string()};
  const std::filesystem::path access_log = logs_.path() / "access.log";
  std::uint64_t first_served = 0;
  for (const int run : {0, 1}) {
    Ranks ranks(logs_, 2, flags);
    const auto codes = ranks.wait();
    std::uint64_t from_source = 0;
    for (int rank = 0; rank < 2; ++rank) {
      ASSERT_EQ(codes[static_cast<std::size_t>(rank)], 0) << ranks.output(rank);
      EXPECT_EQ(rank_tensor_lines(ranks.output(rank)), sorted_tensor_lines(alone.out))
          << "run " << run << ", rank " << rank;
      from_source += summary_value(ranks.output(rank), "source_bytes");
    }
    if (run == 0) {
      first_served = testing::served_bytes(access_log);
      EXPECT_GE(first_served, summary_value(alone.out, "bytes"));
    } else {
      EXPECT_EQ(from_source, 0u);
      EXPECT_EQ(testing::served_bytes(access_log), first_served) << "the second run fetched data";
    }
  }
}

TEST_F(DistributedCli, TheHumanLineSaysWhatTheOtherRanksBroadcast) {
  // The tiny model is one read (its tensors share reads of up to a chunk): one rank reads it all.
  Ranks ranks(logs_, 2, {model_file()});
  const auto codes = ranks.wait();
  std::multiset<std::string> endings;
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(codes[static_cast<std::size_t>(rank)], 0) << ranks.output(rank);
    const auto lines = lines_of(ranks.output(rank));
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back().rfind("streamed 21 tensors (3.8 MiB) from " + model_file() + " in ", 0),
              0u)
        << lines.back();
    endings.insert(lines.back().substr(lines.back().rfind(", ") + 2));
  }
  EXPECT_EQ(endings, (std::multiset<std::string>{"0 B broadcast by 1 other rank]",
                                                 "3.8 MiB broadcast by 1 other rank]"}));
}

TEST_F(DistributedCli, AWorldOfOneIsAPlainStream) {
  const auto alone = run_cli({"stream", model_file(), "--json", "--checksum", "sha256"});
  const auto world = run_cli({"stream", model_file(), "--json", "--checksum", "sha256",
                              "--world-size", "1"});
  ASSERT_EQ(world.exit_code, 0) << world.err;
  EXPECT_EQ(sorted_tensor_lines(world.out), sorted_tensor_lines(alone.out));
  EXPECT_EQ(world.out.find("group_size"), std::string::npos) << world.out;
}

TEST_F(DistributedCli, ARankOutsideTheWorldIsAUsageError) {
  expect_usage_error({"--world-size", "2", "--rank", "2", "--rendezvous", "tcp://127.0.0.1:29500"},
                     "rank 2 is outside the world [0, 2)");
}

TEST_F(DistributedCli, GroupFlagsWithoutAWorldAreUsageErrors) {
  expect_usage_error({"--rendezvous", "tcp://127.0.0.1:29500"},
                     "--rendezvous needs --world-size above 1");
  expect_usage_error({"--group-timeout", "5"}, "--group-timeout needs --world-size above 1");
}

TEST_F(DistributedCli, ANegativeRankIsOutsideTheWorld) {
  expect_usage_error({"--world-size", "3", "--rank", "-5", "--rendezvous", "tcp://127.0.0.1:29500"},
                     "rank -5 is outside the world [0, 3)");
}

TEST_F(DistributedCli, AWorldWithoutARendezvousIsAUsageError) {
  expect_usage_error({"--world-size", "2"}, "--world-size 2 needs --rendezvous tcp://HOST:PORT");
}

TEST_F(DistributedCli, RanksWithDifferentChunkSizesFailAtTheRendezvous) {
  Ranks ranks(logs_, 2, {model_file(), "--group-timeout", "20"},
              {{"--chunk-size", "1MiB"}, {"--chunk-size", "2MiB"}});
  const auto codes = ranks.wait();
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(codes[static_cast<std::size_t>(rank)], 1);
    const std::string output = ranks.output(rank);
    EXPECT_NE(output.find("tensorstream: error: rendezvous at tcp://127.0.0.1:"),
              std::string::npos)
        << output;
    EXPECT_NE(output.find("the ranks stream differently"), std::string::npos) << output;
    EXPECT_NE(output.find("with chunk_size 1.0 MiB"), std::string::npos) << output;
    EXPECT_NE(output.find("with chunk_size 2.0 MiB"), std::string::npos) << output;
  }
}

TEST_F(DistributedCli, AKilledRankFailsTheOthersWithinTheTimeout) {
  // A slow server keeps the stream going long enough to kill a rank in the middle of it: with two
  // connections at 128 KiB/s, each rank's third of the 3.9 MB takes some 5 s, and its first
  // 64 KiB read half a second. (With the default 32 connections every read ends at once.)
  auto nginx = start_nginx("limit_rate 128k;");
  if (!nginx) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  const std::string url = nginx->base_url() + "/small/model.safetensors";
  const auto start = std::chrono::steady_clock::now();
  Ranks ranks(logs_, 3,
              {url, "--json", "--chunk-size", "64KiB", "--concurrency", "2", "--group-timeout", "10"});
  // Rank 1 dies once the first tensors have arrived.
  while (ranks.output(1).find("{\"name\":") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now() - start, 60s) << ranks.output(1);
    std::this_thread::sleep_for(20ms);
  }
  ::kill(ranks.process(1).pid(), SIGKILL);
  const auto codes = ranks.wait();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 50s);
  EXPECT_EQ(codes[1], 128 + SIGKILL);
  for (const int rank : {0, 2}) {
    EXPECT_EQ(codes[static_cast<std::size_t>(rank)], 1) << ranks.output(rank);
    const std::string output = ranks.output(rank);
    // Which broadcast failed first, whether this rank was sending or receiving it, and Gloo's
    // words for the lost connection depend on timing.
    const std::string prefix =
        "tensorstream: error: streaming " + url + " on rank " + std::to_string(rank) + ": ";
    EXPECT_TRUE(output.find(prefix + "sending '") != std::string::npos ||
                output.find(prefix + "receiving '") != std::string::npos)
        << output;
    EXPECT_EQ(output.find("{\"summary\""), std::string::npos) << output;
  }
}

// A rank that joined the rendezvous and died there, while the world waits for a third, is
// noticed by its silence within seconds, not at the end of the group timeout.
TEST_F(DistributedCli, ARankThatDiesAtTheRendezvousIsNoticedBeforeTheTimeout) {
  Ranks ranks(logs_, 3, {model_file(), "--group-timeout", "300", "-v"}, {}, 2);
  const auto start = std::chrono::steady_clock::now();
  while (ranks.output(1).find(": rank 1 joined") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now() - start, 120s) << ranks.output(1);
    std::this_thread::sleep_for(20ms);
  }
  const std::string where = ranks.output(1).substr(
      ranks.output(1).find("rendezvous at tcp://"),
      ranks.output(1).find(": rank 1 joined") - ranks.output(1).find("rendezvous at tcp://"));
  ::kill(ranks.process(1).pid(), SIGKILL);
  const auto codes = ranks.wait();
  EXPECT_EQ(codes[1], 128 + SIGKILL);
  EXPECT_EQ(codes[0], 1);
  const std::vector<std::string> lines = lines_of(ranks.output(0));
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "tensorstream: error: " + where +
                              ": rank 1 joined and then stopped answering for 3 s (it was "
                              "killed, crashed or hangs)");
}

TEST_F(DistributedCli, TensorParallelRanksShareTheirFilesWithTheirReplicas) {
  const std::string prefix = shard_for_two_ranks();
  ASSERT_FALSE(prefix.empty());
  // World of 4: ranks 0 and 2 are tensor-parallel rank 0, ranks 1 and 3 rank 1.
  Ranks ranks(logs_, 4, {prefix, "--tp", "2", "--json", "--checksum", "sha256"});
  const auto codes = ranks.wait();
  for (int rank = 0; rank < 4; ++rank) {
    ASSERT_EQ(codes[static_cast<std::size_t>(rank)], 0) << ranks.output(rank);
    const auto alone = run_cli({"stream", prefix, "--tp", "2", "--rank", std::to_string(rank % 2),
                                "--json", "--checksum", "sha256"});
    ASSERT_EQ(alone.exit_code, 0) << alone.err;
    EXPECT_EQ(rank_tensor_lines(ranks.output(rank)), sorted_tensor_lines(alone.out)) << rank;
    EXPECT_EQ(summary_value(ranks.output(rank), "group_size"), 2);
  }
}

TEST_F(DistributedCli, ATensorParallelRankWithoutReplicasStreamsAlone) {
  const std::string prefix = shard_for_two_ranks();
  ASSERT_FALSE(prefix.empty());
  // World of 2 at TP 2: each rank is the only one that needs its files.
  Ranks ranks(logs_, 2, {prefix, "--tp", "2", "--json", "--checksum", "sha256"});
  const auto codes = ranks.wait();
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(codes[static_cast<std::size_t>(rank)], 0) << ranks.output(rank);
    const auto alone = run_cli({"stream", prefix, "--tp", "2", "--rank", std::to_string(rank),
                                "--json", "--checksum", "sha256"});
    EXPECT_EQ(rank_tensor_lines(ranks.output(rank)), sorted_tensor_lines(alone.out)) << rank;
    EXPECT_EQ(ranks.output(rank).find("group_size"), std::string::npos) << ranks.output(rank);
  }
}

class DistributedS3Cli : public s3::testing::S3rverTest {};

TEST_F(DistributedS3Cli, TwoRanksOverS3rverPrintTheStreamAndReadItOnce) {
  TempDir model;
  generate_synthetic_model(model.path(), {.preset = "tiny"});
  s3rver_->put("models", "tiny/model.safetensors", model.path() / "model.safetensors");
  const std::vector<std::string> flags = {"s3://models/tiny/", "--json", "--checksum", "sha256",
                                          "--chunk-size", "64KiB"};
  std::vector<std::string> alone_arguments = {"stream"};
  alone_arguments.insert(alone_arguments.end(), flags.begin(), flags.end());
  const auto alone = run_cli(alone_arguments);
  ASSERT_EQ(alone.exit_code, 0) << alone.err;

  TempDir logs;
  Ranks ranks(logs, 2, flags);
  const auto codes = ranks.wait();
  std::uint64_t fetched = 0;
  for (int rank = 0; rank < 2; ++rank) {
    ASSERT_EQ(codes[static_cast<std::size_t>(rank)], 0) << ranks.output(rank);
    EXPECT_EQ(rank_tensor_lines(ranks.output(rank)), sorted_tensor_lines(alone.out));
    fetched += summary_value(ranks.output(rank), "bytes") -
               summary_value(ranks.output(rank), "broadcast_bytes");
  }
  EXPECT_EQ(fetched, summary_value(alone.out, "bytes"));
}

}  // namespace
}  // namespace tensorstream
