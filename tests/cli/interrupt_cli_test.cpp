// SIGINT and SIGTERM at random points of the commands that write: each ends saying
// "interrupted" with the shell's status for the signal, leaves no temporary and no open
// multipart upload, every file it left is whole and exact, and a rerun copies exactly.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "storage/output_file.hpp"
#include "storage/s3_upload_test.hpp"
#include "support/child_process.hpp"
#include "support/fault_proxy.hpp"
#include "support/fault_server.hpp"
#include "support/held_read_server.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/nginx_server.hpp"
#include "support/random_bytes.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::ChildProcess;
using testing::files_under;
using testing::read_file;
using testing::TempDir;

constexpr int rounds_per_signal = 20;

// A folder to copy: two files of several chunks and parts each, and a small one.
void write_folder(const fs::path& directory) {
  fs::create_directories(directory);
  testing::write_file(directory / "a.bin", testing::random_bytes((6 << 20) + 1, 1));
  testing::write_file(directory / "b.bin", testing::random_bytes((5 << 20) + 3, 2));
  testing::write_file(directory / "config.json", "{}");
}

// The OutputFile temporaries under `directory`, at any depth.
std::vector<std::string> temporaries_under(const fs::path& directory) {
  std::vector<std::string> found;
  std::error_code ignored;
  for (const auto& entry : fs::recursive_directory_iterator(directory, ignored)) {
    if (detail::temporary_target(entry.path().filename().string())) {
      found.push_back(entry.path().string());
    }
  }
  return found;
}

std::string tool() { return TENSORSTREAM_CLI_PATH; }

// How one interrupted copy ended, checked as a user would see it: finished (exit 0), or stopped
// by `signal`, saying so last.
void expect_interrupted_or_done(int status, int signal, const std::string& output) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return;
  const bool said_so = output.ends_with("tensorstream: interrupted\n");
  if (WIFEXITED(status)) {
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal) << output;
    EXPECT_TRUE(said_so) << output;
    return;
  }
  // The signal's default action: before the tool's handlers were in place (nothing said yet),
  // between two steps of the work (saying so), or as the tool exited after finishing it (the
  // copy's summary said last; slow to exit under the sanitizers).
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal) << status << ": " << output;
  EXPECT_TRUE(output.empty() || said_so || output.starts_with("copied ")) << output;
}

// Every file of `copy` is whole and exact, as under `source`, and no temporary lies beside it.
void expect_only_whole_files(const fs::path& copy, const fs::path& source) {
  EXPECT_EQ(temporaries_under(copy.parent_path()), std::vector<std::string>{});
  std::error_code ignored;
  if (!fs::exists(copy, ignored)) return;
  for (const auto& name : files_under(copy)) {
    EXPECT_EQ(read_file(copy / name), read_file(source / name)) << name;
  }
}

// Runs `argv` once to learn how long it takes, then 20 times with SIGINT and 20 with SIGTERM at
// random points of that time, calling `check` after each run; `fresh` clears the destination
// before every run but the first and the last one's rerun, which the test makes itself.
template <class Fresh, class Check>
void interrupt_at_random(const std::vector<std::string>& argv, const fs::path& logs,
                         Fresh fresh, Check check) {
  const auto start = std::chrono::steady_clock::now();
  {
    ChildProcess whole(argv, logs / "whole.log");
    const int status = whole.wait();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << testing::read_text_file(logs / "whole.log");
  }
  const auto took = std::chrono::duration_cast<std::chrono::microseconds>(
      std::chrono::steady_clock::now() - start);
  check();
  std::mt19937 random(11);
  std::uniform_int_distribution<long> at(0, took.count());
  for (const int signal : {SIGINT, SIGTERM}) {
    for (int round = 0; round < rounds_per_signal; ++round) {
      SCOPED_TRACE("round " + std::to_string(round) + " of signal " + std::to_string(signal));
      fresh();
      const fs::path log = logs / "round.log";
      ChildProcess run(argv, log);
      std::this_thread::sleep_for(std::chrono::microseconds(at(random)));
      ::kill(run.pid(), signal);
      const int status = run.wait();
      const std::string output = testing::read_text_file(log);
      expect_interrupted_or_done(status, signal, output);
      SCOPED_TRACE(output);
      check();
      if (::testing::Test::HasFailure()) return;
    }
  }
}

class InterruptedCopy : public ::testing::Test {
 protected:
  void SetUp() override { write_folder(source_.path() / "m"); }

  TempDir source_;
  TempDir destination_;
  TempDir logs_;
};

TEST_F(InterruptedCopy, BetweenDirectoriesLeavesNoTemporaryAndOnlyWholeFiles) {
  const fs::path copy = destination_.path() / "copy";
  interrupt_at_random({tool(), "cp", "-r", (source_.path() / "m").string(), copy.string(),
                       "--chunk-size", "1MiB", "--concurrency", "2"},
                      logs_.path(), [&] { fs::remove_all(copy); },
                      [&] { expect_only_whole_files(copy, source_.path() / "m"); });
  const auto rerun =
      testing::run_cli({"cp", "-r", (source_.path() / "m").string(), copy.string()});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(files_under(copy), files_under(source_.path() / "m"));
  expect_only_whole_files(copy, source_.path() / "m");
}

TEST_F(InterruptedCopy, AnInterruptedRunSaysSoAndEndsWithTheSignalsStatus) {
  // A copy held up by a server that answers its stat and never its read: the signal meets the
  // copy mid-run, with the destination's temporary in place.
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) {
    testing::FaultServer server("/a.bin", testing::random_bytes(4 << 20, 3),
                                {.silent_from_request = 1});
    const fs::path log = logs_.path() / "held.log";
    ChildProcess run({tool(), "cp", server.base_url() + "/a.bin",
                      (destination_.path() / "a.bin").string()},
                     log);
    while (server.requests() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    ::kill(run.pid(), signal);
    const int status = run.wait();
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 128 + signal);
    EXPECT_EQ(testing::read_text_file(log), "tensorstream: interrupted\n");
    EXPECT_EQ(files_under(destination_.path()), std::vector<std::string>{});
  }
}

// A command that writes nothing has nothing to clean up: it ends as the signal's default does,
// saying so.
TEST(Interrupted, AStreamEndsAtOnceAsTheSignalEndsAProcess) {
  const TempDir dir;
  const auto server = testing::serve_one_tensor_holding_its_read(dir.path(), 1 << 20, 1000);
  const fs::path log = dir.path() / "stream.log";
  ChildProcess run({tool(), "stream", server->base_url() + "/one.safetensors"}, log);
  while (server->requests() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ::kill(run.pid(), SIGINT);
  const int status = run.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) << status;
  EXPECT_EQ(testing::read_text_file(log), "tensorstream: interrupted\n");
}

class InterruptedS3Copy : public s3::testing::S3UploadTest {
 protected:
  void SetUp() override {
    S3UploadTest::SetUp();
    if (IsSkipped()) return;
    write_folder(source_.path() / "m");
  }

  // Waits until s3rver has answered every request the proxy forwarded: a completion a killed
  // copy sent goes on reading the parts that settle() removes once the copy's abort was seen.
  static void wait_until_answered(const testing::FaultProxy& proxy) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (proxy.requests_in_flight() != 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_EQ(proxy.requests_in_flight(), 0) << "requests still in flight after 30 s";
  }

  TempDir source_;
  TempDir destination_;
  TempDir logs_;
};

TEST_F(InterruptedS3Copy, ADownloadLeavesNoTemporaryAndOnlyWholeFiles) {
  s3rver_->put_directory("models", "m/", source_.path() / "m");
  const fs::path copy = destination_.path() / "copy";
  interrupt_at_random({tool(), "cp", "-r", "s3://models/m/", copy.string(), "--chunk-size",
                       "1MiB", "--concurrency", "2"},
                      logs_.path(), [&] { fs::remove_all(copy); },
                      [&] { expect_only_whole_files(copy, source_.path() / "m"); });
  const auto rerun = testing::run_cli({"cp", "-r", "s3://models/m/", copy.string()});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(files_under(copy), files_under(source_.path() / "m"));
  expect_only_whole_files(copy, source_.path() / "m");
}

TEST_F(InterruptedS3Copy, AnUploadLeavesNoOpenMultipartUpload) {
  testing::FaultProxy proxy(s3rver_->port(), {.answer = abort_emulation(/*deferred=*/true)});
  set("AWS_ENDPOINT_URL", proxy.endpoint());
  interrupt_at_random({tool(), "cp", "-r", (source_.path() / "m").string(), "s3://models/up/",
                       "--chunk-size", "5MiB", "--concurrency", "2"},
                      logs_.path(), [] {}, [&] {
                        wait_until_answered(proxy);
                        settle(proxy);
                        EXPECT_EQ(s3rver_->unfinished_uploads("models"),
                                  std::vector<std::string>{});
                      });
  const auto rerun =
      testing::run_cli({"cp", "-r", (source_.path() / "m").string(), "s3://models/up/"});
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  const auto back = testing::run_cli({"cp", "-r", "s3://models/up/", destination_.path().string() + "/back"});
  ASSERT_EQ(back.exit_code, 0) << back.err;
  for (const auto& name : files_under(source_.path() / "m")) {
    EXPECT_EQ(read_file(destination_.path() / "back" / name),
              read_file(source_.path() / "m" / name))
        << name;
  }
}

// The other commands that write, reading from a slow server: interrupted while a temporary of
// theirs exists, they remove it.
class InterruptedWriter : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::NginxServer::available()) TENSORSTREAM_SKIP_UNLESS_CI("nginx is not installed");
    generate_synthetic_model(served_.path() / "m", {.preset = "tiny", .shards = 2, .index = true});
    nginx_ = std::make_unique<testing::NginxServer>(testing::NginxServer::Options{
        .root = served_.path(), .extra_config = "location /m/ { limit_rate 2m; }"});
  }

  std::string model_url() const { return nginx_->base_url() + "/m/"; }

  // Starts `argv` until a temporary shows up under `watched`, then sends `signal`: the run ends
  // interrupted with none of its temporaries left. A run that finishes before one shows up is
  // tried again.
  void interrupt_while_writing(const std::vector<std::string>& argv, const fs::path& watched,
                               int signal) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      const fs::path log = logs_.path() / "writer.log";
      ChildProcess run(argv, log);
      bool seen = false;
      while (!seen && !run.exited()) seen = !temporaries_under(watched).empty();
      if (!seen) continue;
      ::kill(run.pid(), signal);
      const int status = run.wait();
      const std::string output = testing::read_text_file(log);
      ASSERT_TRUE(WIFEXITED(status)) << status << ": " << output;
      EXPECT_EQ(WEXITSTATUS(status), 128 + signal) << output;
      EXPECT_TRUE(output.ends_with("tensorstream: interrupted\n")) << output;
      EXPECT_EQ(temporaries_under(watched), std::vector<std::string>{});
      return;
    }
    FAIL() << "no run of " << argv[1] << " was caught writing";
  }

  TempDir served_;
  TempDir work_;
  TempDir logs_;
  std::unique_ptr<testing::NginxServer> nginx_;
};

TEST_F(InterruptedWriter, GenModelRemovesItsTemporaries) {
  interrupt_while_writing({tool(), "gen-model", (work_.path() / "gen").string(), "--preset",
                           "llama-7b-4layers"},
                          work_.path(), SIGINT);
}

TEST_F(InterruptedWriter, PrefetchRemovesItsTemporaries) {
  interrupt_while_writing({tool(), "prefetch", model_url(), (work_.path() / "pre").string(),
                           "--include-safetensors"},
                          work_.path(), SIGTERM);
}

TEST_F(InterruptedWriter, ShardRemovesItsTemporaries) {
  interrupt_while_writing(
      {tool(), "shard", model_url(), (work_.path() / "tp").string(), "--tp", "2"},
      work_.path(), SIGINT);
}

TEST_F(InterruptedWriter, PartitionRemovesItsTemporaries) {
  interrupt_while_writing({tool(), "partition", model_url(), (work_.path() / "parts").string()},
                          work_.path(), SIGTERM);
}

}  // namespace
}  // namespace tensorstream
