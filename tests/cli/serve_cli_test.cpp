// `tensorstream serve`: what an operator and a supervisor see, and what workers keep after it.

#include <gtest/gtest.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "store/server_fixture.hpp"
#include "support/child_process.hpp"
#include "support/files.hpp"
#include "support/nginx_server.hpp"
#include "support/process.hpp"
#include "support/sha256.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/attached_rank.hpp"

namespace tensorstream::store::testing {
namespace {

namespace fs = std::filesystem;
using tensorstream::testing::ChildProcess;
using tensorstream::testing::read_text_file;
using tensorstream::testing::run_cli;
using tensorstream::testing::TempDir;

// `text` as a regular expression that matches it alone.
std::string literal(const std::string& text) {
  return std::regex_replace(text, std::regex(R"([.^$|()[\]{}*+?\\])"), R"(\$&)");
}

class ServeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(run_cli({"gen-model", model().string(), "--preset", "tiny"}).exit_code, 0);
    ASSERT_EQ(run_cli({"partition", model().string(), raw().string(), "--tp", "1,2"}).exit_code,
              0);
  }

  fs::path model() const { return dir_.path() / "model"; }
  fs::path raw() const { return dir_.path() / "raw"; }
  fs::path socket() const { return dir_.path() / "store.sock"; }
  fs::path ready_file() const { return dir_.path() / "ready.json"; }
  fs::path out() const { return dir_.path() / "serve.out"; }
  fs::path err() const { return dir_.path() / "serve.err"; }

  // `tensorstream serve ARGUMENTS...`, its stdout and stderr in out() and err().
  std::unique_ptr<ChildProcess> serve(const std::vector<std::string>& arguments) {
    std::vector<std::string> argv{"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"" + err().string() + "\"",
                                  TENSORSTREAM_CLI_PATH, "serve"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    return std::make_unique<ChildProcess>(argv, out());
  }

  // Waits for `path` to exist, failing if `process` exits first.
  static void wait_for(const fs::path& path, ChildProcess& process) {
    const auto deadline = std::chrono::steady_clock::now() + patience;
    while (!fs::exists(path)) {
      ASSERT_FALSE(process.exited()) << "serve exited";
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "no " << path;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // `serve MODEL --tp TP --socket SOCKET{rank} --ready-file READY{rank}` for ranks 0 and 1 of a
  // world of two, rank r serving tp[r]; their output in server{rank}.log.
  std::vector<std::unique_ptr<ChildProcess>> start_two_servers(
      const std::vector<std::string>& tp) {
    const std::string rendezvous =
        "tcp://127.0.0.1:" + std::to_string(tensorstream::testing::pick_free_port());
    std::vector<std::unique_ptr<ChildProcess>> servers;
    for (const int rank : {0, 1}) {
      const std::string suffix = std::to_string(rank);
      std::vector<std::string> argv{TENSORSTREAM_CLI_PATH, "serve", model().string(), "--tp",
                                    tp[static_cast<std::size_t>(rank)], "--socket",
                                    socket().string() + suffix, "--world-size", "2", "--rank",
                                    suffix, "--rendezvous", rendezvous, "--group-timeout", "30",
                                    "--ready-file", ready_file().string() + suffix};
      servers.push_back(
          std::make_unique<ChildProcess>(argv, dir_.path() / ("server" + suffix + ".log")));
    }
    return servers;
  }

  TempDir dir_;
};

TEST_F(ServeCli, ReportsEachRankThenReadyAndExitsCleanlyOnSigtermLeavingWorkersTheirMemory) {
  auto server = serve({raw().string(), "--tp", "2", "--socket", socket().string(),
                       "--kv-cache-blocks", "4", "--ready-file", ready_file().string()});
  wait_for(ready_file(), *server);
  const std::string output = read_text_file(out());
  const std::regex expected(
      "\\{\"rank\":0,\"generation\":1,\"tensors\":15,\"bytes\":1976832,\"kv_cache_bytes\":32768,"
      "\"seconds\":[0-9]+\\.[0-9]{3}\\}\n"
      "\\{\"rank\":1,\"generation\":1,\"tensors\":15,\"bytes\":1976832,\"kv_cache_bytes\":32768,"
      "\"seconds\":[0-9]+\\.[0-9]{3}\\}\n"
      "(\\{\"ready\":\\{\"socket\":\"" + socket().string() + "\",\"generation\":1,\"pid\":" +
      std::to_string(server->pid()) +
      ",\"started\":\"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\",\"ranks\":\\[0,1\\],\"bytes\":3953664,\"seconds\":[0-9]+\\.[0-9]{3},"
      "\"gb_per_s\":[0-9]+\\.[0-9]{3}\\}\\})\n");
  std::smatch match;
  ASSERT_TRUE(std::regex_match(output, match, expected)) << output;
  EXPECT_EQ(read_text_file(ready_file()), match[1].str() + "\n");

  const AttachedRank rank = attach(socket(), 1);
  const TensorEntry* norm = rank.find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  const auto before = tensorstream::testing::sha256_hex(rank.bytes(*norm));
  const TensorEntry* key = rank.find("model.layers.0.self_attn.kv_cache.key");
  ASSERT_NE(key, nullptr);
  rank.writable_bytes(*key)[0] = std::byte{42};

  const int status = server->stop();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_text_file(err()), "");
  EXPECT_FALSE(fs::exists(socket()));
  EXPECT_FALSE(fs::exists(ready_file()));
  // The server is gone; the worker's mappings are not.
  EXPECT_EQ(tensorstream::testing::sha256_hex(rank.bytes(*norm)), before);
  EXPECT_EQ(rank.bytes(*key)[0], std::byte{42});
}

TEST_F(ServeCli, SigintStopsItCleanlyToo) {
  auto server = serve({raw().string(), "--tp", "1", "--socket", socket().string()});
  wait_for(socket(), *server);
  ::kill(server->pid(), SIGINT);
  const int status = server->wait();
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_FALSE(fs::exists(socket()));
}

TEST_F(ServeCli, ALoadFailureIsOneErrorLineAndRemovesTheSocket) {
  const auto broken = raw() / "TP2" / "shard0" / "model.norm.weight.bin";
  {
    std::fstream file(broken, std::ios::in | std::ios::out | std::ios::binary);
    file.write("WART", 4);
  }
  const auto result =
      run_cli({"serve", raw().string(), "--tp", "2", "--socket", socket().string()});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.err.starts_with("tensorstream: error: " + broken.string() + ": "))
      << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_FALSE(fs::exists(socket()));

  const auto missing = run_cli({"serve", (dir_.path() / "nothing").string(), "--tp", "2",
                                "--socket", socket().string()});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.err.starts_with("tensorstream: error: " + (dir_.path() / "nothing").string()))
      << missing.err;
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  EXPECT_FALSE(fs::exists(socket()));
}

// `serve … | head -1`: a reader that went away stops the server cleanly instead of a SIGPIPE
// that would leave its socket file behind.
TEST_F(ServeCli, AStdoutNobodyReadsStopsItCleanlyWithOneErrorLine) {
  int pipe_ends[2];
  ASSERT_EQ(::pipe(pipe_ends), 0);
  ::close(pipe_ends[0]);
  const std::string cli = TENSORSTREAM_CLI_PATH;
  const std::string err_path = err().string();
  const std::vector<std::string> arguments{cli, "serve", raw().string(), "--tp", "2",
                                           "--socket", socket().string()};
  // Built before fork(): the child may only make async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& argument : arguments) argv.push_back(const_cast<char*>(argument.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::dup2(pipe_ends[1], STDOUT_FILENO);
    const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err_fd, STDERR_FILENO);
    ::execv(cli.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(pipe_ends[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_EQ(read_text_file(err()), "tensorstream: error: stdout: Broken pipe\n");
  EXPECT_FALSE(fs::exists(socket()));
}

TEST_F(ServeCli, AServerStartedWhereAKilledOneLeftItsSocketAndReadyFileTakesThemOver) {
  auto killed = serve({raw().string(), "--tp", "1", "--socket", socket().string(),
                       "--ready-file", ready_file().string()});
  wait_for(ready_file(), *killed);
  ::kill(killed->pid(), SIGKILL);
  killed->wait();
  ASSERT_TRUE(fs::exists(socket()));
  const std::string stale = read_text_file(ready_file());
  EXPECT_NE(stale.find("\"pid\":" + std::to_string(killed->pid()) + ","), std::string::npos)
      << stale;

  auto next = serve({raw().string(), "--tp", "1", "--socket", socket().string(),
                     "--ready-file", ready_file().string()});
  // The stale file goes as the new server takes the socket; its own comes once it is ready.
  const std::string mine = "\"pid\":" + std::to_string(next->pid()) + ",";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!fs::exists(ready_file()) || read_text_file(ready_file()).find(mine) == std::string::npos) {
    ASSERT_FALSE(next->exited()) << read_text_file(err());
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_text_file(err());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(attach(socket(), 0).manifest().rank, 0);
  const int status = next->stop();
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_FALSE(fs::exists(socket()));
  EXPECT_FALSE(fs::exists(ready_file()));
}

TEST_F(ServeCli, ReloadAndSighupServeNewVersionsWhileAWorkerKeepsItsBytes) {
  auto server = serve({raw().string(), "--tp", "2", "--socket", socket().string(),
                       "--ready-file", ready_file().string()});
  wait_for(ready_file(), *server);
  const AttachedRank worker = attach(socket(), 1);
  const TensorEntry* norm = worker.find("model.norm.weight");
  ASSERT_NE(norm, nullptr);
  const auto old_norm = tensorstream::testing::sha256_hex(worker.bytes(*norm));
  const auto norm_of = [&](const AttachedRank& rank) {
    return tensorstream::testing::sha256_hex(rank.bytes(*rank.find("model.norm.weight")));
  };

  // Another source, by request.
  const auto reloaded = run_cli({"reload", socket().string(), model().string()});
  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.err;
  EXPECT_TRUE(std::regex_match(
      reloaded.out, std::regex(socket().string() + ": serving generation 2 of " +
                               model().string() + ": 2 ranks, 3\\.8 MiB, loaded in [0-9]+\\.[0-9] s\n")))
      << reloaded.out;
  EXPECT_EQ(attach(socket(), 1).manifest().model, model().string() + "/");

  // The same source, changed, on SIGHUP: the ready file follows.
  tensorstream::testing::invert_tensor_data(model() / "model.safetensors");
  ::kill(server->pid(), SIGHUP);
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (read_text_file(ready_file()).find("\"generation\":3,") == std::string::npos) {
    ASSERT_FALSE(server->exited()) << read_text_file(err());
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_text_file(out());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const AttachedRank fresh = attach(socket(), 1);
  EXPECT_EQ(fresh.manifest().generation, 3u);
  EXPECT_NE(norm_of(fresh), old_norm);
  EXPECT_EQ(norm_of(worker), old_norm);
  const std::string output = read_text_file(out());
  EXPECT_NE(output.find("{\"rank\":1,\"generation\":3,\"tensors\":15,"), std::string::npos)
      << output;
  EXPECT_NE(output.find("{\"ready\":{\"socket\":\"" + socket().string() + "\",\"generation\":3,"),
            std::string::npos)
      << output;
  const auto status = run_cli({"status", socket().string()});
  EXPECT_NE(status.out.find(": serving " + model().string() + " (generation 3) at tp 2,"),
            std::string::npos)
      << status.out;

  // A reload that fails is the requester's error and the server's warning; it serves on.
  const std::string missing = (dir_.path() / "nothere").string();
  const auto failed = run_cli({"reload", socket().string(), missing});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_TRUE(failed.err.starts_with("tensorstream: error: " + socket().string() + ": " + missing))
      << failed.err;
  EXPECT_EQ(std::count(failed.err.begin(), failed.err.end(), '\n'), 1) << failed.err;
  EXPECT_TRUE(read_text_file(err()).starts_with("tensorstream: warning: reload of " + missing +
                                                " failed, still serving generation 3: " + missing))
      << read_text_file(err());
  EXPECT_EQ(norm_of(attach(socket(), 1)), norm_of(fresh));

  const int stopped = server->stop();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0) << stopped;
  EXPECT_EQ(norm_of(worker), old_norm);
}

// A presigned URL's query is its signature: whoever may attach (status, reload) and whoever reads
// the server's log sees the source with `?…` instead. nginx ignores the query.
TEST_F(ServeCli, ASignedSourceIsShownWithoutItsQueryByStatusReloadAndTheServersWarnings) {
  if (!tensorstream::testing::NginxServer::available()) {
    TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
  }
  tensorstream::testing::NginxServer nginx({.root = dir_.path()});
  const std::string query = "?X-Amz-Signature=secret123&sig=secret456";
  const std::string source = nginx.base_url() + "/model/model.safetensors";
  auto server = serve({source + query, "--tp", "2", "--socket", socket().string(),
                       "--ready-file", ready_file().string()});
  wait_for(ready_file(), *server);

  const auto status = run_cli({"status", socket().string()});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_TRUE(std::regex_match(
      status.out,
      std::regex(literal(socket().string() + ": serving " + source + "?… at tp 2, pid " +
                         std::to_string(server->pid())) +
                 ", up [0-9]+ s\n"
                 "rank 0: ready, 1\\.9 MiB of 1\\.9 MiB, 0 workers attached, 0 waiting\n"
                 "rank 1: ready, 1\\.9 MiB of 1\\.9 MiB, 0 workers attached, 0 waiting\n")))
      << status.out;
  const auto json = run_cli({"status", socket().string(), "--json"});
  EXPECT_EQ(json.out.substr(0, json.out.find(",\"pid\":")),
            "{\"source\":\"" + source + "?…\",\"tp\":2,\"generation\":1")
      << json.out;

  const auto reloaded = run_cli({"reload", socket().string()});
  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.err;
  EXPECT_TRUE(std::regex_match(
      reloaded.out, std::regex(literal(socket().string() + ": serving generation 2 of " + source +
                                       "?…: 2 ranks, 3.8 MiB, loaded in ") +
                               "[0-9]+\\.[0-9] s\n")))
      << reloaded.out;
  const auto reloaded_json = run_cli({"reload", socket().string(), source + query, "--json"});
  EXPECT_EQ(reloaded_json.exit_code, 0) << reloaded_json.err;
  EXPECT_EQ(reloaded_json.out.substr(0, reloaded_json.out.find(",\"seconds\":")),
            "{\"generation\":3,\"source\":\"" + source + "?…\"")
      << reloaded_json.out;

  // A failed reload: the requester's error, the server's warning and the status's last line.
  const std::string missing = nginx.base_url() + "/nothere/model.safetensors";
  const auto failed = run_cli({"reload", socket().string(), missing + query});
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_EQ(failed.err, "tensorstream: error: " + socket().string() + ": " + missing +
                            "?…: HTTP 404 Not Found\n");
  const auto after = run_cli({"status", socket().string()});
  EXPECT_TRUE(after.out.ends_with("\nreload: generation 4 of " + missing + "?… failed: " +
                                  missing + "?…: HTTP 404 Not Found\n"))
      << after.out;

  const int stopped = server->stop();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0) << stopped;
  EXPECT_EQ(read_text_file(err()), "tensorstream: warning: reload of " + missing +
                                       "?… failed, still serving generation 3: " + missing +
                                       "?…: HTTP 404 Not Found\n");
  for (const auto& shown : {status.out, json.out, reloaded.out, reloaded_json.out, after.out,
                            read_text_file(out())}) {
    EXPECT_EQ(shown.find("secret"), std::string::npos) << shown;
  }
}

TEST_F(ServeCli, AReloadOfARelativePathReadsItWhereTheRequestIsMade) {
  auto server = serve({raw().string(), "--tp", "2", "--socket", socket().string(),
                       "--ready-file", ready_file().string()});
  wait_for(ready_file(), *server);
  // The server runs where the test does; the request comes from the model's parent directory.
  const fs::path here = fs::current_path();
  fs::current_path(model().parent_path());
  const auto reloaded = run_cli({"reload", socket().string(), model().filename().string()});
  fs::current_path(here);
  EXPECT_EQ(reloaded.exit_code, 0) << reloaded.err;
  EXPECT_EQ(attach(socket(), 1).manifest().model, model().string() + "/");
  const int stopped = server->stop();
  EXPECT_TRUE(WIFEXITED(stopped) && WEXITSTATUS(stopped) == 0) << stopped;
}

TEST_F(ServeCli, ASecondServerOnALiveSocketRefusesToStart) {
  auto first = serve({raw().string(), "--tp", "1", "--socket", socket().string(),
                      "--ready-file", ready_file().string()});
  wait_for(ready_file(), *first);
  const auto second =
      run_cli({"serve", raw().string(), "--tp", "1", "--socket", socket().string()});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_EQ(second.err, "tensorstream: error: " + socket().string() +
                            ": another server is listening on this socket\n");
  EXPECT_EQ(attach(socket(), 0).manifest().rank, 0);
}

TEST_F(ServeCli, BadArgumentsAreOneLineUsageErrors) {
  const auto rank = run_cli(
      {"serve", raw().string(), "--tp", "2", "--ranks", "2", "--socket", socket().string()});
  EXPECT_EQ(rank.exit_code, 2);
  EXPECT_EQ(rank.err, "tensorstream: error: rank 2 is outside TP 2 (ranks 0 to 1)\n");
  const auto dtype = run_cli({"serve", raw().string(), "--tp", "2", "--socket",
                              socket().string(), "--kv-cache-blocks", "4", "--kv-dtype", "F12"});
  EXPECT_EQ(dtype.exit_code, 2);
  EXPECT_EQ(dtype.err,
            "tensorstream: error: --kv-dtype: unknown dtype 'F12' (e.g. BF16, F16, F32, "
            "F8_E4M3)\n");
  const auto both = run_cli({"serve", raw().string(), "--tp", "2", "--socket", socket().string(),
                             "--kv-cache-blocks", "4", "--kv-cache-memory", "1GiB"});
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_TRUE(both.err.starts_with("tensorstream: error: ")) << both.err;
  EXPECT_EQ(std::count(both.err.begin(), both.err.end(), '\n'), 1) << both.err;
  EXPECT_FALSE(fs::exists(socket()));
}

TEST_F(ServeCli, TwoServersReadTheCheckpointTogetherAndServeTheSameBytes) {
  // One server per node, one read per cluster: each reads half and receives the rest.
  auto servers = start_two_servers({"2", "2"});
  for (const int rank : {0, 1}) {
    wait_for(ready_file().string() + std::to_string(rank), *servers[static_cast<std::size_t>(rank)]);
  }
  for (const std::string tp_rank : {"0", "1"}) {
    const auto first = run_cli({"attach", socket().string() + "0", "--rank", tp_rank, "--json",
                                "--checksum", "sha256"});
    const auto second = run_cli({"attach", socket().string() + "1", "--rank", tp_rank, "--json",
                                 "--checksum", "sha256"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    EXPECT_EQ(second.out, first.out);
  }
  for (auto& server : servers) {
    const int status = server->stop();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
}

TEST_F(ServeCli, ServersOfOneGroupServingDifferentRanksFailAtTheRendezvous) {
  auto servers = start_two_servers({"1", "2"});
  for (const int rank : {0, 1}) {
    const int status = servers[static_cast<std::size_t>(rank)]->wait();
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
    const std::string log = read_text_file(dir_.path() / ("server" + std::to_string(rank) + ".log"));
    EXPECT_NE(log.find("the ranks stream differently"), std::string::npos) << log;
    EXPECT_NE(log.find("serving --tp 1 --ranks all"), std::string::npos) << log;
    EXPECT_NE(log.find("serving --tp 2 --ranks all"), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace tensorstream::store::testing
