#include "tensorstream/store/socket_server.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "store/message.hpp"
#include "store/server_fixture.hpp"
#include "support/print_error_kind.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/store/client.hpp"

namespace tensorstream::store::testing {
namespace {

std::string reply_json(const std::string& error, const std::string& kind,
                       bool transient = false) {
  return "{\"error\":\"" + error + "\",\"kind\":\"" + kind + "\",\"transient\":" +
         (transient ? "true" : "false") + "}";
}

// Runs `body(0)` ... `body(7)` at once, each on a thread of its own.
void on_eight_threads(const std::function<void(int)>& body) {
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) threads.emplace_back(body, i);
  for (auto& thread : threads) thread.join();
}

// An attach of `rank` that must succeed and carry the rank's two regions.
void expect_attach_works(const std::filesystem::path& path, int rank) {
  const ReceivedReply reply = request(path, attach_request(rank, patience), patience);
  EXPECT_EQ(reply.json, StoreServerTest::attach_json(rank));
  ASSERT_EQ(reply.fds.size(), 2u);
  EXPECT_EQ(mapped_content(reply.fds[0].get()), StoreServerTest::weights(rank));
  EXPECT_EQ(mapped_content(reply.fds[1].get()), StoreServerTest::kv_cache(rank));
}

TEST_F(StoreServerTest, AttachPassesTheRankRegionsWithTheReply) {
  start();
  const ReceivedReply reply = request(socket_path_, attach_request(1, patience), patience);
  EXPECT_EQ(reply.json, attach_json(1));
  ASSERT_EQ(reply.fds.size(), 2u);
  EXPECT_EQ(mapped_content(reply.fds[0].get()), weights(1));
  EXPECT_EQ(mapped_content(reply.fds[1].get()), kv_cache(1));
  for (std::size_t i = 0; i < 2; ++i) {
    // New descriptors of the same memory, close-on-exec in the receiver.
    struct stat received {}, served {};
    ASSERT_EQ(::fstat(reply.fds[i].get(), &received), 0);
    ASSERT_EQ(::fstat(regions_[1][i].get(), &served), 0);
    EXPECT_NE(reply.fds[i].get(), regions_[1][i].get());
    EXPECT_EQ(received.st_ino, served.st_ino);
    EXPECT_EQ(::fcntl(reply.fds[i].get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
  }
}

TEST_F(StoreServerTest, RegionsAreSharedNotCopied) {
  start();
  const ReceivedReply reply = request(socket_path_, attach_request(0, patience), patience);
  ASSERT_EQ(reply.fds.size(), 2u);
  const std::string written = "by worker";  // within the region: its size is sealed
  ASSERT_EQ(::pwrite(reply.fds[1].get(), written.data(), written.size(), 0),
            static_cast<ssize_t>(written.size()));
  EXPECT_EQ(mapped_content(regions_[0][1].get()).substr(0, written.size()), written);
}

TEST_F(StoreServerTest, StatusHasNoDescriptors) {
  start();
  const ReceivedReply reply = request(socket_path_, status_request(), patience);
  EXPECT_EQ(reply.json, status_json);
  EXPECT_TRUE(reply.fds.empty());
}

TEST_F(StoreServerTest, HandlerSeesTheRequestAndItsPeer) {
  start();
  request(socket_path_, "{\"op\":\"attach\",\"rank\":1,\"timeout_ms\":1234,\"extra\":[1]}",
          patience);
  request(socket_path_, "{\"op\":\"attach\",\"rank\":0}", patience);
  request(socket_path_, "{\"op\":\"status\",\"rank\":\"ignored\"}", patience);
  const std::vector<Request> seen = requests();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].op, Operation::attach);
  EXPECT_EQ(seen[0].rank, 1u);
  EXPECT_EQ(seen[0].timeout, std::chrono::milliseconds(1234));
  EXPECT_EQ(seen[0].peer.pid, ::getpid());
  EXPECT_EQ(seen[0].peer.uid, ::geteuid());
  EXPECT_EQ(seen[0].peer.gid, ::getegid());
  EXPECT_EQ(seen[1].rank, 0u);
  EXPECT_EQ(seen[1].timeout, default_attach_timeout);
  EXPECT_EQ(seen[2].op, Operation::status);
}

TEST_F(StoreServerTest, MalformedRequestsGetAnErrorReplyAndTheServerGoesOn) {
  start();
  const std::string over_limit("\x01\x00\x01\x00", 4);  // 65537
  const std::vector<std::pair<std::string, std::string>> cases = {
      {framed("{\"op\":\"detach\",\"rank\":0}"),
       reply_json("unknown op \\\"detach\\\" (expected \\\"attach\\\", \\\"status\\\" or \\\"reload\\\")",
                  "invalid_argument")},
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
       reply_json("a message of 542393671 bytes exceeds the limit of 65536 bytes",
                  "invalid_argument")},
      {over_limit,
       reply_json("a message of 65537 bytes exceeds the limit of 65536 bytes", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":"),
       reply_json("the request is not valid JSON", "invalid_argument")},
      {framed(""), reply_json("the request is not valid JSON", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":0}\xff"),
       reply_json("the request is not valid JSON", "invalid_argument")},
      {framed("[\"attach\",0]"),
       reply_json("the request is not a JSON object", "invalid_argument")},
      {framed("{\"rank\":0}"), reply_json("the request has no \\\"op\\\"", "invalid_argument")},
      {framed("{\"op\":1}"), reply_json("\\\"op\\\" must be a string", "invalid_argument")},
      {framed("{\"op\":\"attach\"}"), reply_json("attach needs \\\"rank\\\"", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":-1}"),
       reply_json("\\\"rank\\\" must be an integer from 0 to 4294967295", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":1.5}"),
       reply_json("\\\"rank\\\" must be an integer from 0 to 4294967295", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":\"1\"}"),
       reply_json("\\\"rank\\\" must be an integer from 0 to 4294967295", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":0,\"timeout_ms\":86400001}"),
       reply_json("\\\"timeout_ms\\\" must be an integer from 0 to 86400000", "invalid_argument")},
      {framed("{\"op\":\"attach\",\"rank\":9}"),
       reply_json("rank 9 is not served", "invalid_argument")},
  };
  for (const auto& [bytes, expected] : cases) {
    SCOPED_TRACE(bytes);
    const UniqueFd client = connect_raw(socket_path_);
    write_raw(client.get(), bytes);
    const Message reply = reply_then_close(client.get());
    EXPECT_EQ(reply.json, expected);
    EXPECT_TRUE(reply.fds.empty());
    expect_attach_works(socket_path_, 1);
  }
}

TEST_F(StoreServerTest, ARequestCarryingDescriptorsIsRefusedAndTheyNeverReachTheServer) {
  const std::size_t before = open_descriptors();
  start();
  {
    const UniqueFd client = connect_raw(socket_path_);
    const UniqueFd passed = memfd_with("unwanted");
    const int fds[] = {passed.get(), passed.get(), passed.get()};
    send_message(client.get(), "{\"op\":\"status\"}", fds,
                 std::chrono::steady_clock::now() + patience);
    EXPECT_EQ(reply_then_close(client.get()).json,
              reply_json("a request carries no descriptors, and this one came with some",
                         "invalid_argument"));
  }
  stop();
  EXPECT_EQ(open_descriptors(), before);
  EXPECT_TRUE(requests().empty());
}

// Sends the first byte of a request with `count` copies of `fd`, and nothing more.
void send_first_byte_with(int socket, int fd, std::size_t count) {
  std::vector<int> fds(count, fd);
  std::vector<unsigned char> control(CMSG_SPACE(sizeof(int) * count));
  char byte = 16;
  iovec data{&byte, 1};
  msghdr header{};
  header.msg_iov = &data;
  header.msg_iovlen = 1;
  header.msg_control = control.data();
  header.msg_controllen = control.size();
  cmsghdr* rights = CMSG_FIRSTHDR(&header);
  rights->cmsg_level = SOL_SOCKET;
  rights->cmsg_type = SCM_RIGHTS;
  rights->cmsg_len = CMSG_LEN(sizeof(int) * count);
  std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * count);
  ASSERT_EQ(::sendmsg(socket, &header, MSG_NOSIGNAL), 1) << std::strerror(errno);
}

TEST_F(StoreServerTest, StalledPeersSendingDescriptorsLeaveTheServerBoundedAndAttachable) {
#ifdef __SANITIZE_THREAD__
  GTEST_SKIP() << "TSan stops a child of a threaded process that starts threads (die_after_fork)";
#endif
  start();
  const UniqueFd memfd = memfd_with("hoarded");
  const std::size_t before = open_descriptors();
  // Each stalls after one byte that carries the most descriptors a message can: without room
  // for them, the kernel closes them on the server's side as the byte is read.
  constexpr std::size_t peers = 1000;
  rlimit descriptors{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &descriptors), 0);
  if (descriptors.rlim_max < before + 2 * peers + 64) {
    GTEST_SKIP() << "RLIMIT_NOFILE's hard limit of " << descriptors.rlim_max
                 << " leaves no room for " << peers << " connections";
  }
  descriptors.rlim_cur = descriptors.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &descriptors), 0);
  std::vector<UniqueFd> clients;
  for (std::size_t i = 0; i < peers; ++i) {
    clients.push_back(connect_raw(socket_path_));
    send_first_byte_with(clients.back().get(), memfd.get(), max_reply_descriptors);
  }
  // This process's own: its connections, the server's side of the ones it serves (at most 8
  // from one process; the rest are turned away at once), and a few of the server's own.
  const std::size_t served = SocketServerOptions{}.max_connections_per_process;
  EXPECT_LE(open_descriptors(), before + peers + served + 4);
  // Each is answered at once, and none is left holding a connection: refused for the
  // descriptors its byte carried, or turned away while the server's connections from this
  // process were all taken.
  const std::string refused = reply_json(
      "a request carries no descriptors, and this one came with some", "invalid_argument");
  const std::string turned_away =
      "{\"error\":\"too many connections from process " + std::to_string(::getpid()) +
      " (at most " + std::to_string(served) +
      ")\",\"kind\":\"storage\",\"transient\":true,\"unavailable\":true}";
  std::size_t refusals = 0;
  for (const auto& client : clients) {
    const std::string reply = reply_then_close(client.get()).json;
    EXPECT_TRUE(reply == refused || reply == turned_away) << reply;
    refusals += reply == refused;
  }
  EXPECT_GE(refusals, 1U);
  EXPECT_TRUE(requests().empty());
  // Another process is served meanwhile.
  const pid_t child = ::fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    try {
      const ReceivedReply reply = request(socket_path_, attach_request(1, patience), patience);
      ::_exit(reply.fds.size() == 2 ? 0 : 1);
    } catch (...) {
      ::_exit(2);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST_F(StoreServerTest, SilentAndStalledClientsAreDisconnectedAtTheDeadline) {
  SocketServerOptions options = this->options();
  options.request_timeout = std::chrono::milliseconds(1000);
  start(options, default_handler());
  const std::string expected =
      reply_json("no complete request within 1000 ms", "deadline_exceeded");
  const UniqueFd silent = connect_raw(socket_path_);
  const UniqueFd stalled = connect_raw(socket_path_);
  write_raw(stalled.get(), framed("{\"op\":\"status\"}").substr(0, 9));
  expect_attach_works(socket_path_, 0);
  EXPECT_EQ(reply_then_close(silent.get()).json, expected);
  EXPECT_EQ(reply_then_close(stalled.get()).json, expected);
  expect_attach_works(socket_path_, 1);
}

TEST_F(StoreServerTest, ClientsThatHangUpMidRequestDoNotDisturbOthers) {
  start();
  on_eight_threads([this](int i) {
    for (int round = 0; round < 5; ++round) {
      if (i % 2 == 0) {
        expect_attach_works(socket_path_, i % 4 / 2);
        continue;
      }
      const UniqueFd client = connect_raw(socket_path_);
      const std::string bytes = framed("{\"op\":\"attach\",\"rank\":1}");
      write_raw(client.get(), bytes.substr(0, round % 2 == 0 ? 4 : 10));
    }
  });
  expect_attach_works(socket_path_, 1);
}

TEST_F(StoreServerTest, ClientThatHangsUpWhileTheHandlerWaitsCancelsIt) {
  start();
  {
    const UniqueFd client = connect_raw(socket_path_);
    write_raw(client.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
    hold_.await_waiting(1);
  }
  hold_.await_cancelled(1);
  expect_attach_works(socket_path_, 0);
}

TEST_F(StoreServerTest, ClientThatShutsDownItsWritingSideStillGetsItsReply) {
  start();
  const UniqueFd client = connect_raw(socket_path_);
  write_raw(client.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
  ASSERT_EQ(::shutdown(client.get(), SHUT_WR), 0);
  hold_.await_waiting(1);
  hold_.release();
  const Message reply = reply_then_close(client.get());
  EXPECT_EQ(reply.json, attach_json(0));
  EXPECT_EQ(reply.fds.size(), 2u);
}

TEST_F(StoreServerTest, ClientThatHangsUpMidReplyDoesNotHurtTheServer) {
  start();
  {
    const UniqueFd client = connect_raw(socket_path_);
    write_raw(client.get(), framed("{\"op\":\"attach\",\"rank\":7}"));
    char prefix[4];
    ASSERT_EQ(::recv(client.get(), prefix, sizeof(prefix), MSG_WAITALL), 4);
  }
  expect_attach_works(socket_path_, 1);
}

TEST_F(StoreServerTest, EightConcurrentClientsEachGetTheirRegions) {
  start();
  on_eight_threads([this](int i) {
    for (int round = 0; round < 10; ++round) expect_attach_works(socket_path_, (i + round) % 2);
  });
}

TEST_F(StoreServerTest, OneConnectionOverTheLimitIsTurnedAway) {
  SocketServerOptions options = this->options();
  options.max_connections = 1;
  start(options, default_handler());
  const UniqueFd waiting = connect_raw(socket_path_);
  write_raw(waiting.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
  hold_.await_waiting(1);
  const UniqueFd extra = connect_raw(socket_path_);
  EXPECT_EQ(reply_then_close(extra.get()).json,
            "{\"error\":\"too many connections (at most 1)\",\"kind\":\"storage\","
            "\"transient\":true,\"unavailable\":true}");
  const auto error =
      thrown<ServerUnavailable>([&] { request(socket_path_, status_request(), patience); });
  EXPECT_STREQ(error.what(),
               (socket_path_.string() + ": too many connections (at most 1)").c_str());
  EXPECT_TRUE(error.transient());
  hold_.release();
  EXPECT_EQ(reply_then_close(waiting.get()).json, attach_json(0));
  expect_attach_works(socket_path_, 1);
}

TEST_F(StoreServerTest, OneProcessCannotHoldMoreThanItsShareOfConnections) {
  SocketServerOptions options = this->options();
  options.max_connections_per_process = 2;
  start(options, default_handler());
  const UniqueFd first = connect_raw(socket_path_);
  const UniqueFd second = connect_raw(socket_path_);
  write_raw(first.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
  write_raw(second.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
  hold_.await_waiting(2);
  const auto error =
      thrown<ServerUnavailable>([&] { request(socket_path_, status_request(), patience); });
  EXPECT_EQ(std::string(error.what()), socket_path_.string() +
                                           ": too many connections from process " +
                                           std::to_string(::getpid()) + " (at most 2)");
  hold_.release();
  EXPECT_EQ(reply_then_close(first.get()).json, attach_json(0));
  EXPECT_EQ(reply_then_close(second.get()).json, attach_json(0));
  expect_attach_works(socket_path_, 1);
}

TEST_F(StoreServerTest, PeerOutsideThePolicyIsRefusedWithNothingElse) {
  SocketServerOptions options = this->options();
  options.allow_own_uid = false;
  options.allowed_uids = {::geteuid() + 1};
  options.allowed_gids = {::getegid() + 1};
  start(options, default_handler());
  const std::string refusal = "uid " + std::to_string(::geteuid()) + " is not allowed to attach";
  // The refusal comes at once, before any request: writing one could meet a closed socket.
  const UniqueFd client = connect_raw(socket_path_);
  const Message reply = reply_then_close(client.get());
  EXPECT_EQ(reply.json, reply_json(refusal, "access_denied"));
  EXPECT_TRUE(reply.fds.empty());
  const auto error =
      thrown<StorageError>([&] { request(socket_path_, attach_request(0, patience), patience); });
  EXPECT_STREQ(error.what(), (socket_path_.string() + ": " + refusal).c_str());
  EXPECT_EQ(error.kind(), ErrorKind::access_denied);
  EXPECT_TRUE(requests().empty());
}

TEST_F(StoreServerTest, PeerAllowedByUidOrGid) {
  for (const bool by_uid : {true, false}) {
    SocketServerOptions options = this->options();
    options.allow_own_uid = false;
    if (by_uid) options.allowed_uids = {::geteuid()};
    if (!by_uid) options.allowed_gids = {::getegid()};
    start(options, default_handler());
    expect_attach_works(socket_path_, 1);
    stop();
  }
}

TEST_F(StoreServerTest, SocketFileIsPrivateAndRemovedOnStop) {
  start();
  struct stat status {};
  ASSERT_EQ(::lstat(socket_path_.c_str(), &status), 0);
  EXPECT_TRUE(S_ISSOCK(status.st_mode));
  EXPECT_EQ(status.st_mode & 07777, 0600u);
  stop();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(socket_path_)));
  const auto error =
      thrown<StorageError>([&] { request(socket_path_, status_request(), patience); });
  EXPECT_STREQ(error.what(),
               (socket_path_.string() + ": no server is listening (no socket file)").c_str());
  EXPECT_TRUE(error.transient());
}

TEST_F(StoreServerTest, TheSocketFileOpensToWhomThePolicyNames) {
  const auto mode_and_group = [&](SocketServerOptions options) {
    start(options, default_handler());
    struct stat status {};
    EXPECT_EQ(::lstat(socket_path_.c_str(), &status), 0);
    stop();
    return std::pair<unsigned, gid_t>(status.st_mode & 07777, status.st_gid);
  };
  SocketServerOptions one_group = options();
  one_group.allowed_gids = {::getegid()};
  EXPECT_EQ(mode_and_group(one_group), std::make_pair(0660u, ::getegid()));
  SocketServerOptions groups = options();
  groups.allowed_gids = {::getegid(), ::getegid() + 1};
  EXPECT_EQ(mode_and_group(groups).first, 0666u);
  SocketServerOptions users = options();
  users.allowed_uids = {::geteuid() + 1};
  EXPECT_EQ(mode_and_group(users).first, 0666u);
  EXPECT_EQ(mode_and_group(options()).first, 0600u);
}

TEST_F(StoreServerTest, DestructionRemovesTheSocketFile) {
  start();
  server_.reset();
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(socket_path_)));
}

TEST_F(StoreServerTest, SecondServerOnALivePathRefusesToStart) {
  start();
  const auto error = thrown<StateError>(
      [&] { SocketServer second(io_.get_executor(), options(), default_handler()); });
  EXPECT_STREQ(error.what(),
               (socket_path_.string() + ": another server is listening on this socket").c_str());
  expect_attach_works(socket_path_, 0);
}

TEST_F(StoreServerTest, StaleSocketFileIsReplaced) {
  {
    const UniqueFd stale(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    const sockaddr_un address = unix_address(socket_path_.string());
    ASSERT_EQ(::bind(stale.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)),
              0);
  }
  const auto error =
      thrown<StorageError>([&] { request(socket_path_, status_request(), patience); });
  EXPECT_STREQ(error.what(),
               (socket_path_.string() + ": no server is listening (connection refused)").c_str());
  start();
  expect_attach_works(socket_path_, 1);
}

TEST_F(StoreServerTest, UnsafeOrUnusablePathsAreRefused) {
  const std::string path = socket_path_.string();
  const auto refusal = [&](const SocketServerOptions& options) {
    try {
      SocketServer server(io_.get_executor(), options, default_handler());
    } catch (const InvalidArgument& error) {
      return std::string(error.what());
    }
    return std::string("no exception");
  };
  std::ofstream(socket_path_) << "not a socket";
  EXPECT_EQ(refusal(options()), path + ": exists and is not a socket");
  std::filesystem::remove(socket_path_);

  std::filesystem::permissions(dir_.path(), std::filesystem::perms::all);
  EXPECT_EQ(refusal(options()), path + ": directory " + dir_.path().string() +
                                    " is writable by other users; put the socket in a directory "
                                    "only the server's user can write");
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all);

  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(dir_.path().c_str(), 65534, static_cast<gid_t>(-1)), 0);
    EXPECT_EQ(refusal(options()), path + ": directory " + dir_.path().string() +
                                      " belongs to uid 65534; put the socket in a directory of "
                                      "the server's user or root");
    ASSERT_EQ(::chown(dir_.path().c_str(), 0, static_cast<gid_t>(-1)), 0);
  }

  SocketServerOptions missing = options();
  missing.path = dir_.path() / "missing" / "store.sock";
  EXPECT_EQ(refusal(missing), missing.path.string() + ": cannot use directory " +
                                  (dir_.path() / "missing").string() +
                                  ": No such file or directory");

  SocketServerOptions long_path = options();
  long_path.path = dir_.path() / std::string(120, 'x');
  EXPECT_EQ(refusal(long_path),
            long_path.path.string() + ": a socket path is at most 107 bytes long");
}

TEST_F(StoreServerTest, HandlerErrorsReachTheClientAsTheirKind) {
  start(options(), [](Request request) -> asio::awaitable<Reply> {
    switch (request.rank) {
      case 0: throw NotFoundError("s3://bucket/rank0.traw", "HTTP 404 Not Found");
      case 1: throw StorageError("s3://bucket/rank1.traw", "HTTP 503 Slow Down", true);
      case 2: throw DeadlineExceeded("rank 2 is not loaded after 10 ms");
      case 3: throw FormatError("rank3.traw: bad magic");
      case 4: throw StateError("the server is stopping");
      case 5:
        throw StorageError("s3://bucket/rank5.traw", "InvalidAccessKeyId (HTTP 403)", false,
                           ErrorKind::access_denied);
      case 6: throw CredentialsError("AWS", "environment", "AWS_ACCESS_KEY_ID is not set", false);
      case 7: throw InvalidArgument("rank 7 is not served");
      case 8: throw Cancelled("the load was stopped");
      default: throw std::runtime_error("out of memory\nsecond line");
    }
    co_return Reply{};
  });
  const std::string path = socket_path_.string();
  // The class caught, the message, the kind, and whether a StorageError is transient.
  using Outcome = std::tuple<std::string, std::string, ErrorKind, bool>;
  const auto outcome = [&](std::uint32_t rank) -> Outcome {
    try {
      request(socket_path_, attach_request(rank, patience), patience);
    } catch (const NotFoundError& error) {
      return {"NotFoundError", error.what(), error.kind(), error.transient()};
    } catch (const StorageError& error) {
      return {"StorageError", error.what(), error.kind(), error.transient()};
    } catch (const DeadlineExceeded& error) {
      return {"DeadlineExceeded", error.what(), error.kind(), false};
    } catch (const FormatError& error) {
      return {"FormatError", error.what(), error.kind(), false};
    } catch (const StateError& error) {
      return {"StateError", error.what(), error.kind(), false};
    } catch (const InvalidArgument& error) {
      return {"InvalidArgument", error.what(), error.kind(), false};
    } catch (const Cancelled& error) {
      return {"Cancelled", error.what(), error.kind(), false};
    } catch (const Error& error) {
      return {"Error", error.what(), error.kind(), false};
    }
    return {"none", "", ErrorKind::other, false};
  };
  EXPECT_EQ(outcome(0),
            Outcome("NotFoundError", path + ": s3://bucket/rank0.traw: HTTP 404 Not Found",
                    ErrorKind::not_found, false));
  // Transient on the server, transient for the client: its caller may retry.
  EXPECT_EQ(outcome(1),
            Outcome("StorageError", path + ": s3://bucket/rank1.traw: HTTP 503 Slow Down",
                    ErrorKind::storage, true));
  EXPECT_EQ(outcome(2), Outcome("DeadlineExceeded", path + ": rank 2 is not loaded after 10 ms",
                                ErrorKind::deadline_exceeded, false));
  EXPECT_EQ(outcome(3),
            Outcome("FormatError", path + ": rank3.traw: bad magic", ErrorKind::format, false));
  EXPECT_EQ(outcome(4),
            Outcome("StateError", path + ": the server is stopping", ErrorKind::state, false));
  EXPECT_EQ(outcome(5), Outcome("StorageError",
                                path + ": s3://bucket/rank5.traw: InvalidAccessKeyId (HTTP 403)",
                                ErrorKind::access_denied, false));
  EXPECT_EQ(outcome(6), Outcome("Error",
                                path + ": AWS credentials from environment: "
                                       "AWS_ACCESS_KEY_ID is not set",
                                ErrorKind::credentials, false));
  EXPECT_EQ(outcome(7), Outcome("InvalidArgument", path + ": rank 7 is not served",
                                ErrorKind::invalid_argument, false));
  EXPECT_EQ(outcome(8),
            Outcome("Cancelled", path + ": the load was stopped", ErrorKind::cancelled, false));
  EXPECT_EQ(outcome(9),
            Outcome("Error", path + ": out of memory\nsecond line", ErrorKind::other, false));

  const UniqueFd client = connect_raw(socket_path_);
  write_raw(client.get(), framed("{\"op\":\"attach\",\"rank\":9}"));
  EXPECT_EQ(reply_then_close(client.get()).json,
            reply_json("out of memory\\nsecond line", "error"));
}

TEST_F(StoreServerTest, ReplyWithTooManyDescriptorsBecomesAnError) {
  const UniqueFd region = memfd_with("x");
  start(options(), [&region](Request) -> asio::awaitable<Reply> {
    Reply reply;
    reply.json = "{}";
    reply.fds.assign(max_reply_descriptors + 1, region.get());
    co_return reply;
  });
  const UniqueFd client = connect_raw(socket_path_);
  write_raw(client.get(), framed("{\"op\":\"status\"}"));
  EXPECT_EQ(reply_then_close(client.get()).json,
            reply_json("a message carries 254 descriptors; at most 253 fit in one", "error"));
}

TEST_F(StoreServerTest, StopCancelsWaitingHandlersAndClosesTheirConnections) {
  start();
  const UniqueFd client = connect_raw(socket_path_);
  write_raw(client.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
  hold_.await_waiting(1);
  stop();
  hold_.await_cancelled(1);
  char byte;
  EXPECT_EQ(::recv(client.get(), &byte, 1, 0), 0);
}

TEST_F(StoreServerTest, NoDescriptorLeaksOverTheServersLife) {
  const std::size_t before = open_descriptors();
  start();
  expect_attach_works(socket_path_, 0);
  request(socket_path_, status_request(), patience);
  for (const std::string& bytes : {framed("{\"op\":\"nope\"}"), std::string("\xff\xff\xff\xff")}) {
    const UniqueFd client = connect_raw(socket_path_);
    write_raw(client.get(), bytes);
    reply_then_close(client.get());
  }
  {
    const UniqueFd dropped = connect_raw(socket_path_);
    write_raw(dropped.get(), framed("{\"op\":\"attach\",\"rank\":1}").substr(0, 6));
  }
  {
    const UniqueFd waiting = connect_raw(socket_path_);
    write_raw(waiting.get(), framed("{\"op\":\"attach\",\"rank\":5}"));
    hold_.await_waiting(1);
  }
  hold_.await_cancelled(1);
  stop();
  EXPECT_EQ(open_descriptors(), before);
}

}  // namespace
}  // namespace tensorstream::store::testing
