// Fifty rounds each of the ways a distributed load of two store servers ends early: a server
// stopped at a random moment (what SIGTERM does to `tensorstream serve`), its member lost as a
// killed process is, and a server whose reads of tensor data are refused. Every round must end,
// each server loaded or failed with one error, its memory released once the late broadcasts
// land: the sanitizer builds run these too.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "store/served_model.hpp"
#include "streaming/forwarding_store.hpp"
#include "streaming/refusing_store.hpp"
#include "support/local_group.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/storage/scheme.hpp"
#include "tensorstream/transfer/partition_checkpoint.hpp"

namespace tensorstream::store::testing {
namespace {

namespace fs = std::filesystem;
using tensorstream::testing::LocalGroup;
using tensorstream::testing::RefusingStore;
using tensorstream::testing::TempDir;

constexpr int rounds = 50;

// Given to one member's stores in StoreOptions::extra: its reads of tensor data are refused.
struct RefuseData {};

// rounds:///path: files, refused to the member whose options say so. The servers open their
// stores by scheme, so this is how a test gives one of them another store.
void register_rounds_scheme() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_scheme({.name = "rounds",
                     .form = UrlForm::path,
                     .open = [](const Url&, boost::asio::any_io_executor executor,
                                const StoreOptions& options) -> std::unique_ptr<ObjectStore> {
                       if (options.find<RefuseData>()) {
                         return std::make_unique<RefusingStore>(std::move(executor));
                       }
                       return std::make_unique<tensorstream::testing::ForwardingStore>(
                           std::move(executor));
                     }});
  });
}

class FiftyServeRounds : public ::testing::Test {
 protected:
  void SetUp() override {
    register_rounds_scheme();
    generate_synthetic_model(dir_.path() / "model", {.preset = "tiny"});
    PartitionOptions partition;
    partition.tensor_parallel_sizes = {2};
    partition_checkpoint_blocking((dir_.path() / "model").string(),
                                  (dir_.path() / "raw").string(), partition);
  }

  StoreServerOptions options(LocalGroup& group, int member, bool refusing) const {
    StoreServerOptions options;
    options.tensor_parallel_size = 2;
    options.socket.path = dir_.path() / ("store" + std::to_string(member) + ".sock");
    options.stream.chunk_size = 64 * 1024;
    options.stream.memory_limit = 2 << 20;
    options.stream.distributed.group = group.member(member);
    if (refusing) options.stream.store.set(RefuseData{});
    return options;
  }

  std::string source() const { return "rounds://" + (dir_.path() / "raw").string() + "/"; }

  // The error of a load, "" when it loaded every rank.
  static std::string load_error(ServedModel& server) {
    try {
      server.wait_loaded();
      return "";
    } catch (const std::exception& error) {
      return error.what();
    }
  }

  TempDir dir_;
};

TEST_F(FiftyServeRounds, AServerStoppedAtARandomMomentEndsEveryRoundCleanly) {
  std::mt19937 random(31);
  for (int i = 0; i < rounds; ++i) {
    LocalGroup group(2, LocalGroup::Failures::complete_early);
    const int stopped = static_cast<int>(random() % 2);
    std::string errors[2];
    {
      ServedModel first(source(), options(group, 0, false));
      ServedModel second(source(), options(group, 1, false));
      ServedModel* servers[2] = {&first, &second};
      first.start_loading();
      second.start_loading();
      std::this_thread::sleep_for(std::chrono::microseconds(random() % 20'000));
      servers[stopped]->stop();
      group.lose(stopped);
      for (int member = 0; member < 2; ++member) errors[member] = load_error(*servers[member]);
    }
    group.land_late();
    // Each server loaded everything before the stop, or ended with one of the errors a stop
    // makes, whichever member's report reached the group first: its own stop, the stream it
    // closed, the collective that failed with it, or the lost connection.
    for (int member = 0; member < 2; ++member) {
      const std::string& error = errors[member];
      EXPECT_TRUE(error.empty() || error.ends_with(" was stopped") ||
                  error.ends_with("failed: its stream was closed before the end") ||
                  error.ends_with("did not all report their plans: its stream was closed "
                                  "before the end") ||
                  error.find("connection to rank " + std::to_string(stopped) + " lost") !=
                      std::string::npos)
          << "round " << i << ", server " << member << ": " << error;
    }
  }
}

TEST_F(FiftyServeRounds, AServerWhoseReadsAreRefusedFailsBothInEveryRound) {
  for (int i = 0; i < rounds; ++i) {
    LocalGroup group(2, LocalGroup::Failures::complete_early);
    std::string errors[2];
    {
      ServedModel first(source(), options(group, 0, false));
      ServedModel second(source(), options(group, 1, true));
      first.start_loading();
      second.start_loading();
      errors[0] = load_error(first);
      errors[1] = load_error(second);
    }
    group.land_late();
    EXPECT_NE(errors[1].find("HTTP 404 Not Found (injected)"), std::string::npos)
        << "round " << i << ": " << errors[1];
    EXPECT_NE(errors[0].find("rank 1 failed: "), std::string::npos)
        << "round " << i << ": " << errors[0];
  }
}

}  // namespace
}  // namespace tensorstream::store::testing
