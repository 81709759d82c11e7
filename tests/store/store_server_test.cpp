// StoreServer: loading ranks, attaches that wait for them, status, and failures that every
// attach then reports.

#include "tensorstream/store/store_server.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <array>
#include <atomic>
#include <boost/asio/use_awaitable.hpp>
#include <cstring>
#include <fstream>
#include <future>
#include <regex>
#include <thread>

#include "model/vllm_oracle.hpp"
#include "store/served_model.hpp"
#include "store/server_fixture.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/loopback_listener.hpp"
#include "support/sha256.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/attached_rank.hpp"
#include "tensorstream/store/client.hpp"
#include "tensorstream/transfer/partition_checkpoint.hpp"
#include "transfer/shard_checkpoint.hpp"

namespace tensorstream::store::testing {
namespace {

namespace fs = std::filesystem;
using tensorstream::testing::TempDir;

class StoreServerLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    generate_synthetic_model(model(), {.preset = "tiny"});
    PartitionOptions partition;
    partition.tensor_parallel_sizes = {1, 2};
    partition_checkpoint_blocking(model().string(), raw().string(), partition);
  }

  fs::path model() const { return dir_.path() / "model"; }
  fs::path raw() const { return dir_.path() / "raw"; }
  fs::path socket() const { return dir_.path() / "store.sock"; }

  StoreServerOptions options(int tp) const {
    StoreServerOptions options;
    options.tensor_parallel_size = tp;
    options.socket.path = socket();
    return options;
  }

  // The bytes of `name` on rank `rank` of `tp`, by the oracle.
  static std::vector<std::byte> expected(const std::string& name, int tp, int rank) {
    const auto config = synthetic_preset("tiny");
    for (const auto& spec : llama_tensors(config)) {
      if (spec.name != name) continue;
      const auto full = synthetic_bytes(spec.name, 0, tensor_byte_size(spec));
      const auto cut = tensorstream::testing::vllm_cut(spec.name, spec.shape, config, tp, rank);
      return cut ? tensorstream::testing::cut_bytes(full, spec.shape, *cut) : full;
    }
    throw std::runtime_error("no tensor " + name);
  }

  static void expect_bytes(const AttachedRank& rank, const std::string& name,
                           const std::vector<std::byte>& bytes) {
    const TensorEntry* entry = rank.find(name);
    ASSERT_NE(entry, nullptr) << name;
    const auto mapped = rank.bytes(*entry);
    ASSERT_EQ(mapped.size(), bytes.size()) << name;
    EXPECT_EQ(std::memcmp(mapped.data(), bytes.data(), bytes.size()), 0) << name;
  }

  TempDir dir_;
};

TEST_F(StoreServerLoad, AnAttachBeforeLoadingWaitsAndGetsTheLoadedRank) {
  ServedModel served(raw().string(), options(2));
  auto attached = std::async(std::launch::async, [&] { return attach(socket(), 1); });
  const auto waiting = [&] { return served.status().find("\"waiting\":1") != std::string::npos; };
  ASSERT_TRUE(eventually(waiting)) << served.status();
  served.load();
  const AttachedRank rank = attached.get();
  EXPECT_EQ(rank.manifest().rank, 1);
  EXPECT_EQ(rank.manifest().tensor_parallel_size, 2);
  expect_bytes(rank, "model.embed_tokens.weight", expected("model.embed_tokens.weight", 2, 1));
  expect_bytes(rank, "model.layers.1.self_attn.o_proj.weight",
               expected("model.layers.1.self_attn.o_proj.weight", 2, 1));
}

// `tensorstream shard`'s rank files, without a config.json: served as stored, fused.
TEST_F(StoreServerLoad, AnAttachStartedBeforeTheServerWaitsForItsSocket) {
  std::optional<ServedModel> served;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    served.emplace(raw().string(), options(2));
    served->start_loading();
  });
  const AttachedRank rank = attach(socket(), 1, {.timeout = std::chrono::seconds(30)});
  starter.join();
  expect_bytes(rank, "model.norm.weight", expected("model.norm.weight", 2, 1));
}

TEST_F(StoreServerLoad, AnAttachGivesUpOnAMissingServerAtItsTimeoutSayingSo) {
  const auto waited = [&](std::chrono::milliseconds timeout) {
    try {
      attach(socket(), 0, {.timeout = timeout});
    } catch (const ServerUnavailable& error) {
      EXPECT_TRUE(error.transient());
      return std::string(error.what());
    }
    return std::string("attached");
  };
  EXPECT_EQ(waited(std::chrono::milliseconds(0)),
            socket().string() + ": no server is listening (no socket file)");
  EXPECT_EQ(waited(std::chrono::milliseconds(200)),
            socket().string() +
                ": no server is listening (no socket file); gave up after waiting 200 ms");
}

TEST_F(StoreServerLoad, RankFilesAreServedAsTheyAreStored) {
  ShardOptions shard;
  shard.tensor_parallel_size = 2;
  shard_checkpoint(model().string(), (dir_.path() / "ranks").string(), shard);
  ASSERT_FALSE(fs::exists(dir_.path() / "ranks" / "config.json"));
  ServedModel served((dir_.path() / "ranks").string(), options(2));
  served.load();
  for (const int r : {0, 1}) {
    const AttachedRank rank = attach(socket(), static_cast<std::uint32_t>(r));
    EXPECT_EQ(rank.manifest().config_json, "{}");
    expect_bytes(rank, "model.embed_tokens.weight", expected("model.embed_tokens.weight", 2, r));
    expect_bytes(rank, "model.layers.0.mlp.down_proj.weight",
                 expected("model.layers.0.mlp.down_proj.weight", 2, r));
    EXPECT_NE(rank.find("model.layers.0.self_attn.qkv_proj.weight"), nullptr);
  }
}

// A status reply with its uptime, which depends on the clock, written as U.
std::string with_any_uptime(const std::string& status) {
  return std::regex_replace(status, std::regex("\"uptime_seconds\":[0-9]+,"),
                            "\"uptime_seconds\":U,");
}

TEST_F(StoreServerLoad, StatusReportsEachRanksBytesAndAttaches) {
  auto served_options = options(2);
  served_options.ranks = {1};
  ServedModel served(raw().string(), served_options);
  const std::string server = "{\"source\":\"" + raw().string() + "\",\"tp\":2,\"generation\":1,\"pid\":" +
                             std::to_string(::getpid()) + ",\"uptime_seconds\":U,";
  EXPECT_EQ(with_any_uptime(served.status()),
            server + "\"ranks\":[{\"rank\":1,\"state\":\"queued\",\"bytes\":0,"
                     "\"bytes_loaded\":0,\"attaches\":0,\"attached\":0,\"waiting\":0}]}");
  served.load();
  // Two replies to one process, which holds one of them: one worker attached.
  const AttachedRank held = attach(socket(), 1);
  attach(socket(), 1);
  EXPECT_EQ(with_any_uptime(served.status()),
            server + "\"ranks\":[{\"rank\":1,\"state\":\"ready\",\"bytes\":1976832,"
                     "\"bytes_loaded\":1976832,\"attaches\":2,\"attached\":1,"
                     "\"waiting\":0}]}");
  const auto reply = request(socket(), status_request(), patience);
  EXPECT_EQ(with_any_uptime(reply.json), with_any_uptime(served.status()));
}

TEST_F(StoreServerLoad, ARankThatIsNotServedIsAnInvalidArgumentNamingTheServedOnes) {
  auto served_options = options(2);
  served_options.ranks = {1};
  ServedModel served(raw().string(), served_options);
  served.load();
  try {
    attach(socket(), 0);
    FAIL() << "attached";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              socket().string() + ": rank 0 is not served (this server serves rank 1 of TP 2)");
  }
}

TEST_F(StoreServerLoad, AnAttachThatOutwaitsItsTimeoutIsDeadlineExceeded) {
  ServedModel served(raw().string(), options(1));
  try {
    attach(socket(), 0, {.timeout = std::chrono::milliseconds(20)});
    FAIL() << "attached";
  } catch (const DeadlineExceeded& error) {
    EXPECT_EQ(std::string(error.what()),
              socket().string() + ": rank 0 is not loaded after 20 ms (not started yet)");
  }
  served.load();
  EXPECT_EQ(attach(socket(), 0).manifest().rank, 0);
}

// A TRAW object whose magic is wrong: the load fails naming it, and so does every attach.
TEST_F(StoreServerLoad, AFailedLoadIsTheAnswerToEveryAttachOfARankNotReady) {
  const auto broken = raw() / "TP2" / "shard1" / "model.norm.weight.bin";
  {
    std::fstream file(broken, std::ios::in | std::ios::out | std::ios::binary);
    file.write("WART", 4);
  }
  ServedModel served(raw().string(), options(2));
  std::string message;
  try {
    served.load();
    FAIL() << "loaded";
  } catch (const FormatError& error) {
    message = error.what();
  }
  EXPECT_TRUE(message.starts_with(broken.string() + ": ")) << message;
  EXPECT_EQ(attach(socket(), 0).manifest().rank, 0);
  try {
    attach(socket(), 1);
    FAIL() << "attached";
  } catch (const FormatError& error) {
    EXPECT_EQ(std::string(error.what()), socket().string() + ": " + message);
  }
  EXPECT_NE(served.status().find("\"rank\":1,\"state\":\"failed\""), std::string::npos)
      << served.status();
}

// An HTTP server that reads requests and never answers: a load from it waits on the network
// until stopped.
class SilentServer {
 public:
  SilentServer()
      : listener_([this](boost::asio::ip::tcp::socket socket) -> boost::asio::awaitable<void> {
          if (first_.exchange(false)) connected_.set_value();
          std::array<char, 4096> buffer;
          for (;;) {
            co_await socket.async_read_some(boost::asio::buffer(buffer),
                                            boost::asio::use_awaitable);
          }
        }) {}

  std::string url() const {
    return "http://127.0.0.1:" + std::to_string(listener_.port()) + "/m/model.safetensors";
  }

  void wait_for_a_connection() { connected_.get_future().wait(); }

 private:
  std::promise<void> connected_;
  std::atomic<bool> first_{true};
  tensorstream::testing::LoopbackListener listener_;
};

TEST_F(StoreServerLoad, StopEndsALoadThatIsWaitingOnTheNetwork) {
  SilentServer silent;
  ServedModel served(silent.url(), options(1));
  served.start_loading();
  silent.wait_for_a_connection();
  served.stop();
  EXPECT_THROW(served.wait_loaded(), Cancelled);
  EXPECT_FALSE(fs::exists(socket()));
}

TEST_F(StoreServerLoad, AnAttachWaitingWhenTheServerStopsIsToldWhy) {
  SilentServer silent;
  ServedModel served(silent.url(), options(1));
  served.start_loading();
  silent.wait_for_a_connection();
  auto waiting = std::async(std::launch::async, [&] {
    try {
      attach(socket(), 0, {.timeout = std::chrono::seconds(30)});
    } catch (const StateError& error) {
      return std::string(error.what());
    }
    return std::string("attached");
  });
  ASSERT_TRUE(eventually([&] { return served.status().find("\"waiting\":1") != std::string::npos; }));
  served.stop();
  // The load was still reading the header, so the rank had not started loading.
  EXPECT_EQ(waiting.get(), socket().string() + ": the server stopped before rank 0 was loaded");
  EXPECT_THROW(served.wait_loaded(), Cancelled);
}

TEST_F(StoreServerLoad, APlainCheckpointWithoutConfigCannotBeCutAndSaysWhy) {
  fs::remove(model() / "config.json");
  ServedModel served(model().string(), options(2));
  try {
    served.load();
    FAIL() << "loaded";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()),
              (model() / "config.json").string() +
                  ": not found; partitioning a checkpoint for tensor parallelism needs its head "
                  "layout from config.json");
  }
}

TEST_F(StoreServerLoad, HeadsThatDoNotDivideFailTheLoadBeforeAnythingIsRead) {
  ServedModel served(model().string(), options(3));
  EXPECT_THROW(served.load(), InvalidArgument);
}

TEST_F(StoreServerLoad, BadOptionsAreRefusedBeforeListening) {
  const auto refused = [&](int tp, std::vector<int> ranks, const std::string& message) {
    auto served_options = options(tp);
    served_options.ranks = std::move(ranks);
    boost::asio::io_context io;
    try {
      StoreServer server(io.get_executor(), raw().string(), served_options);
      ADD_FAILURE() << "started: " << message;
    } catch (const InvalidArgument& error) {
      EXPECT_EQ(std::string(error.what()), message);
    }
    EXPECT_FALSE(fs::exists(socket()));
  };
  refused(0, {}, "tensor-parallel size 0 is below 1");
  refused(2, {2}, "rank 2 is outside TP 2 (ranks 0 to 1)");
  refused(2, {1, 1}, "rank 1 is given twice");
}

// Eight `tensorstream attach` processes at once see the same bytes; one killed while its attach
// waited for the rank disturbs nobody.
TEST_F(StoreServerLoad, EightWorkerProcessesAttachAtOnceAndAKilledOneDisturbsNone) {
  if (std::string(TENSORSTREAM_CLI_PATH).empty()) GTEST_SKIP() << "the CLI is not built";
  ServedModel served(raw().string(), options(2));
  {
    tensorstream::testing::ChildProcess doomed(
        {TENSORSTREAM_CLI_PATH, "attach", socket().string(), "--rank", "0"},
        dir_.path() / "doomed.log");
    const auto waiting = [&] {
      return served.status().find("\"waiting\":1") != std::string::npos;
    };
    ASSERT_TRUE(eventually(waiting)) << served.status();
    ::kill(doomed.pid(), SIGKILL);
    doomed.wait();
    ASSERT_TRUE(eventually([&] { return !waiting(); })) << served.status();
  }
  served.load();
  std::vector<std::unique_ptr<tensorstream::testing::ChildProcess>> workers;
  for (int i = 0; i < 8; ++i) {
    workers.push_back(std::make_unique<tensorstream::testing::ChildProcess>(
        std::vector<std::string>{TENSORSTREAM_CLI_PATH, "attach", socket().string(), "--rank",
                                 std::to_string(i % 2), "--checksum", "sha256"},
        dir_.path() / ("worker" + std::to_string(i) + ".log")));
  }
  std::vector<std::string> outputs;
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(workers[i]->wait(), 0) << i;
    outputs.push_back(tensorstream::testing::read_text_file(dir_.path() /
                                                            ("worker" + std::to_string(i) + ".log")));
  }
  for (int i = 2; i < 8; ++i) EXPECT_EQ(outputs[i], outputs[i % 2]) << i;
  const AttachedRank rank = attach(socket(), 0);
  const auto embed = rank.find("model.embed_tokens.weight");
  ASSERT_NE(embed, nullptr);
  EXPECT_NE(outputs[0].find("model.embed_tokens.weight\tBF16\t[512,256]\tweights+" +
                            std::to_string(embed->offset) + "\t262144\t" +
                            tensorstream::testing::sha256_hex(rank.bytes(*embed))),
            std::string::npos)
      << outputs[0];
  EXPECT_NE(served.status().find("\"attaches\":5"), std::string::npos) << served.status();
}

// A reload: the model's data overwritten in place (every byte inverted, renamed over the old
// file as a deployment would), read again into new regions.
class StoreServerReload : public StoreServerLoad {
 protected:
  void invert_model() const {
    tensorstream::testing::invert_tensor_data(model() / "model.safetensors");
  }

  static std::vector<std::byte> inverted(std::vector<std::byte> bytes) {
    for (auto& byte : bytes) byte = ~byte;
    return bytes;
  }

  // Tensors of both ranks whose cut the oracle knows, vocabulary padding included.
  static constexpr std::array<const char*, 4> checked = {
      "model.embed_tokens.weight", "model.layers.1.self_attn.o_proj.weight",
      "model.layers.0.mlp.down_proj.weight", "model.norm.weight"};

  static void expect_version(const AttachedRank& rank, bool new_version) {
    for (const char* name : checked) {
      const auto old_bytes = expected(name, 2, rank.manifest().rank);
      expect_bytes(rank, name, new_version ? inverted(old_bytes) : old_bytes);
    }
  }
};

TEST_F(StoreServerReload, ServesTheNewVersionWhileEightAttachedWorkersKeepTheirBytes) {
  ServedModel served(model().string(), options(2));
  served.load();
  std::vector<AttachedRank> workers;
  for (std::uint32_t i = 0; i < 8; ++i) workers.push_back(attach(socket(), i % 2));
  invert_model();

  const ReloadOutcome outcome = served.reload();
  EXPECT_EQ(outcome.generation, 2u);
  EXPECT_EQ(outcome.source, model().string());
  ASSERT_EQ(outcome.ranks.size(), 2u);
  EXPECT_FALSE(outcome.error);
  for (const RankReady& ready : outcome.ranks) {
    EXPECT_EQ(ready.generation, 2u);
    EXPECT_EQ(ready.weight_bytes, 1976832u);
  }

  // The server has dropped generation 1; the workers' mappings hold it, byte for byte.
  for (const AttachedRank& worker : workers) {
    EXPECT_EQ(worker.manifest().generation, 1u);
    expect_version(worker, false);
  }
  for (const std::uint32_t r : {0u, 1u}) {
    const AttachedRank fresh = attach(socket(), r);
    EXPECT_EQ(fresh.manifest().generation, 2u);
    expect_version(fresh, true);
  }
  const std::string status = served.status();
  EXPECT_NE(status.find("\"generation\":2,"), std::string::npos) << status;
  EXPECT_EQ(status.find("\"reload\""), std::string::npos) << status;
}

TEST_F(StoreServerReload, AnotherSourceCanBeLoadedAndAReloadRequestSaysWhatIsServed) {
  ServedModel served(model().string(), options(2));
  served.load();
  const AttachedRank before = attach(socket(), 1);
  const ReceivedReply reply = request(socket(), reload_request(raw().string()), patience);
  EXPECT_TRUE(std::regex_match(
      reply.json,
      std::regex("\\{\"generation\":2,\"source\":\"" + raw().string() +
                 "\",\"seconds\":[0-9.]+,\"ranks\":\\[\\{\"rank\":0,\"tensors\":15,"
                 "\"bytes\":1976832,\"kv_cache_bytes\":0,\"seconds\":[0-9.]+\\},\\{\"rank\":1,"
                 "\"tensors\":15,\"bytes\":1976832,\"kv_cache_bytes\":0,\"seconds\":[0-9.]+\\}\\]\\}")))
      << reply.json;
  const AttachedRank after = attach(socket(), 1);
  EXPECT_EQ(after.manifest().model, raw().string() + "/");
  EXPECT_EQ(before.manifest().model, model().string() + "/");
  expect_version(after, false);
  expect_version(before, false);
}

TEST_F(StoreServerReload, AFailedReloadLeavesTheServedGenerationAndStatusSaysWhy) {
  ServedModel served(model().string(), options(2));
  served.load();
  const std::string missing = (dir_.path() / "nothere").string();
  try {
    served.reload(missing);
    FAIL() << "reloaded";
  } catch (const NotFoundError& error) {
    EXPECT_TRUE(std::string(error.what()).starts_with(missing)) << error.what();
  }
  const AttachedRank rank = attach(socket(), 0);
  EXPECT_EQ(rank.manifest().generation, 1u);
  expect_version(rank, false);
  const std::string status = served.status();
  EXPECT_NE(status.find("\"generation\":1,"), std::string::npos) << status;
  EXPECT_NE(status.find(",\"reload\":{\"generation\":2,\"source\":\"" + missing +
                        "\",\"state\":\"failed\",\"error\":\"" + missing),
            std::string::npos)
      << status;
  // The next reload is generation 2 again: a failed one serves nothing.
  invert_model();
  EXPECT_EQ(served.reload().generation, 2u);
  expect_version(attach(socket(), 0), true);
}

TEST_F(StoreServerReload, IsRefusedBeforeTheFirstLoadAndWhileAnotherIsUnderWay) {
  ServedModel served(model().string(), options(2));
  try {
    served.reload();
    FAIL() << "reloaded";
  } catch (const StateError& error) {
    EXPECT_EQ(std::string(error.what()), "generation 1 is not loaded yet; reload once it is served");
  }
  served.load();
  SilentServer silent;
  auto first = served.start_reload(silent.url());
  silent.wait_for_a_connection();
  ASSERT_TRUE(eventually([&] {
    return served.status().find("\"reload\":{\"generation\":2,\"source\":\"" + silent.url() +
                                "\",\"state\":\"loading\"") != std::string::npos;
  })) << served.status();
  try {
    request(socket(), reload_request(), patience);
    FAIL() << "reloaded";
  } catch (const StateError& error) {
    EXPECT_EQ(std::string(error.what()), socket().string() + ": a reload of " + silent.url() +
                                             " (generation 2) is under way");
  }
  // Attaches meanwhile get generation 1.
  expect_version(attach(socket(), 1), false);
  served.stop();
  try {
    first.get();
    FAIL() << "reloaded";
  } catch (const Cancelled& error) {
    EXPECT_EQ(std::string(error.what()), "the server stopped while reloading " + silent.url());
  }
}

}  // namespace
}  // namespace tensorstream::store::testing
