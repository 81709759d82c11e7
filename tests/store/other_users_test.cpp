// The store server and its clients across users, as root runs them in CI: the users and groups
// a server allows attach through its socket, others are refused, and a client refuses a server
// that runs as a user it was not told to trust. Each process under another uid runs through
// setpriv(1).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "store/served_model.hpp"
#include "support/child_process.hpp"
#include "support/process.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/store/client.hpp"

namespace tensorstream::store::testing {
namespace {

namespace fs = std::filesystem;
using tensorstream::testing::ProcessResult;
using tensorstream::testing::TempDir;

constexpr uid_t allowed_uid = 65534;  // nobody
constexpr uid_t other_uid = 65533;
constexpr gid_t allowed_gid = 4242;

class OtherUsers : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "running processes as other users needs root";
    setpriv_ = tensorstream::testing::find_program("setpriv");
    if (!setpriv_) TENSORSTREAM_SKIP_UNLESS_CI("setpriv (util-linux) is not installed");
    // Others must be able to reach the socket, and nothing more.
    fs::permissions(dir_.path(), fs::perms::owner_all | fs::perms::group_exec |
                                     fs::perms::others_exec);
  }

  // `argv` run as `uid` and `gid`, with no supplementary groups.
  ProcessResult run_as(uid_t uid, gid_t gid, std::vector<std::string> argv) const {
    std::vector<std::string> command = {setpriv_->string(), "--reuid=" + std::to_string(uid),
                                        "--regid=" + std::to_string(gid), "--clear-groups"};
    command.insert(command.end(), argv.begin(), argv.end());
    return tensorstream::testing::run_process(command);
  }

  ProcessResult attach_as(uid_t uid, gid_t gid) const {
    return run_as(uid, gid,
                  {TENSORSTREAM_CLI_PATH, "attach", socket().string(), "--rank", "0", "--timeout",
                   "20"});
  }

  fs::path socket() const { return dir_.path() / "store.sock"; }

  TempDir dir_;
  std::optional<fs::path> setpriv_;
};

TEST_F(OtherUsers, AListedUidAndAListedGidAttachAndAnotherUserIsRefused) {
  generate_synthetic_model(dir_.path() / "model", {.preset = "tiny"});
  StoreServerOptions options;
  options.tensor_parallel_size = 1;
  options.socket.path = socket();
  options.socket.allowed_uids = {allowed_uid};
  options.socket.allowed_gids = {allowed_gid};
  ServedModel served((dir_.path() / "model").string(), options);
  served.load();

  const ProcessResult by_uid = attach_as(allowed_uid, allowed_uid);
  EXPECT_EQ(by_uid.exit_code, 0) << by_uid.err;
  EXPECT_NE(by_uid.out.find("attached rank 0 of " + socket().string()), std::string::npos)
      << by_uid.out;
  const ProcessResult by_gid = attach_as(other_uid, allowed_gid);
  EXPECT_EQ(by_gid.exit_code, 0) << by_gid.err;
  const ProcessResult refused = attach_as(other_uid, other_uid);
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_EQ(refused.err, "tensorstream: error: " + socket().string() + ": uid " +
                             std::to_string(other_uid) + " is not allowed to attach\n");

  // Attaching is theirs; what everyone attaches next is the server's user's.
  const ProcessResult reload = run_as(allowed_uid, allowed_uid,
                                      {TENSORSTREAM_CLI_PATH, "reload", socket().string()});
  EXPECT_EQ(reload.exit_code, 1);
  EXPECT_EQ(reload.err, "tensorstream: error: " + socket().string() + ": uid " +
                            std::to_string(allowed_uid) +
                            " may attach but not reload (only root may)\n");
  EXPECT_NE(served.status().find("\"generation\":1,"), std::string::npos);
}

TEST_F(OtherUsers, AClientRefusesAServerRunningAsAnUnexpectedUser) {
  // The system's: one under root's home (pyenv) is out of nobody's reach.
  const auto python = tensorstream::testing::find_program("/usr/bin/python3");
  if (!python) TENSORSTREAM_SKIP_UNLESS_CI("/usr/bin/python3 is not installed");
  // An impostor as nobody, in a directory nobody may write: it answers every request with an
  // error, so that getting its answer shows the client went past the check.
  const fs::path shared = dir_.path() / "shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);
  const fs::path path = shared / "impostor.sock";
  const fs::path script = dir_.path() / "impostor.py";
  std::ofstream(script) << R"(
import json, socket, struct, sys
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(sys.argv[1])
listener.listen()
open(sys.argv[1] + ".listening", "w").close()
while True:
    connection, _ = listener.accept()
    with connection:
        body = json.dumps({"error": "answered by the impostor", "kind": "invalid_argument",
                           "transient": False}).encode()
        try:
            connection.sendall(struct.pack("<I", len(body)) + body)
        except OSError:
            pass
)";
  fs::permissions(script, fs::perms::owner_read | fs::perms::others_read, fs::perm_options::add);
  tensorstream::testing::ChildProcess impostor(
      {setpriv_->string(), "--reuid=" + std::to_string(allowed_uid),
       "--regid=" + std::to_string(allowed_uid), "--clear-groups", python->string(),
       script.string(), path.string()},
      dir_.path() / "impostor.log");
  // The socket's file exists from bind() on, but connections are refused until listen(): the
  // impostor says when it listens.
  const fs::path listening = path.string() + ".listening";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!fs::exists(listening) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(fs::exists(listening));

  const std::chrono::seconds reply_wait(20);
  try {
    request(path, status_request(), reply_wait);
    ADD_FAILURE() << "the impostor's reply was taken";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              path.string() + ": refusing the server: it runs as uid " +
                  std::to_string(allowed_uid) +
                  ", which is neither this user's (0), root's, nor the one given as the "
                  "server's");
    EXPECT_EQ(error.kind(), ErrorKind::access_denied);
  }
  try {
    request(path, status_request(), reply_wait, default_max_reply_bytes, allowed_uid);
    ADD_FAILURE() << "the impostor's error reply was not thrown";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()), path.string() + ": answered by the impostor");
  }
  const ProcessResult cli = tensorstream::testing::run_cli(
      {"attach", path.string(), "--rank", "0", "--timeout", "0"});
  EXPECT_EQ(cli.exit_code, 1);
  EXPECT_NE(cli.err.find("refusing the server: it runs as uid 65534"), std::string::npos)
      << cli.err;
  const ProcessResult trusted = tensorstream::testing::run_cli(
      {"status", path.string(), "--server-uid", std::to_string(allowed_uid)});
  // Past the check, the impostor's reply is taken: an invalid_argument error, a usage error.
  EXPECT_EQ(trusted.exit_code, 2);
  EXPECT_EQ(trusted.err, "tensorstream: error: " + path.string() + ": answered by the impostor\n");
}

}  // namespace
}  // namespace tensorstream::store::testing
