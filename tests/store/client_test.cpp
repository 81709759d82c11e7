#include "tensorstream/store/client.hpp"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <future>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "store/message.hpp"
#include "store/server_fixture.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store::testing {
namespace {

// A server that answers one connection with `reply` and the descriptors `fds`, whatever was
// asked, then closes it.
class OneShotServer {
 public:
  OneShotServer(const std::filesystem::path& path, std::string reply, std::vector<int> fds)
      : listener_(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    const sockaddr_un address = unix_address(path.string());
    if (::bind(listener_.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) !=
            0 ||
        ::listen(listener_.get(), 4) != 0) {
      throw std::runtime_error("cannot listen on " + path.string());
    }
    thread_ = std::thread([this, reply = std::move(reply), fds = std::move(fds)] {
      const UniqueFd connection(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
      const auto deadline = std::chrono::steady_clock::now() + patience;
      receive_message(connection.get(), 1 << 16, deadline);
      send_message(connection.get(), reply, fds, deadline);
    });
  }
  ~OneShotServer() { thread_.join(); }

 private:
  UniqueFd listener_;
  std::thread thread_;
};

TEST(StoreClient, MalformedReplyIsRefusedAndItsDescriptorsClosed) {
  tensorstream::testing::TempDir dir;
  const auto path = dir.path() / "fake.sock";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"not json", ": the reply is not a JSON object"},
      {"[1,2]", ": the reply is not a JSON object"},
      {"{\"error\":7}", ": the reply's \"error\" is not a string"},
  };
  for (const auto& [reply, message] : cases) {
    SCOPED_TRACE(reply);
    std::filesystem::remove(path);
    const UniqueFd region = memfd_with("region");
    const std::size_t before = open_descriptors();
    {
      OneShotServer server(path, reply, {region.get(), region.get()});
      const auto error = thrown<FormatError>([&] { request(path, status_request(), patience); });
      EXPECT_EQ(error.what(), path.string() + message);
    }
    EXPECT_EQ(open_descriptors(), before);
  }
}

TEST(StoreClient, ErrorReplyClosesItsDescriptors) {
  tensorstream::testing::TempDir dir;
  const auto path = dir.path() / "fake.sock";
  const UniqueFd region = memfd_with("region");
  const std::size_t before = open_descriptors();
  {
    OneShotServer server(path, "{\"error\":\"rank 3 is not served\",\"kind\":\"invalid_argument\"}",
                         {region.get()});
    const auto error =
        thrown<InvalidArgument>([&] { request(path, attach_request(3, patience), patience); });
    EXPECT_EQ(error.what(), path.string() + ": rank 3 is not served");
  }
  EXPECT_EQ(open_descriptors(), before);
}

TEST(StoreClient, ErrorOfAnUnknownKindIsAnError) {
  tensorstream::testing::TempDir dir;
  const auto path = dir.path() / "fake.sock";
  OneShotServer server(path, "{\"error\":\"the disk is on fire\"}", {});
  const auto error = thrown<Error>([&] {
    try {
      request(path, status_request(), patience);
    } catch (const StorageError&) {
      ADD_FAILURE() << "too specific";
    }
  });
  EXPECT_EQ(error.what(), path.string() + ": the disk is on fire");
}

TEST(StoreClient, ReplyOverTheLimitIsRefused) {
  tensorstream::testing::TempDir dir;
  const auto path = dir.path() / "fake.sock";
  OneShotServer server(path, "{\"manifest\":\"" + std::string(100, 'm') + "\"}", {});
  const auto error = thrown<FormatError>([&] { request(path, status_request(), patience, 64); });
  EXPECT_EQ(error.what(),
            path.string() + ": a message of 115 bytes exceeds the limit of 64 bytes");
}

TEST(StoreClient, PathLongerThanAnAddressIsRefused) {
  const std::string path = "/tmp/" + std::string(110, 's');
  const auto error = thrown<InvalidArgument>([&] { request(path, status_request(), patience); });
  EXPECT_EQ(error.what(), path + ": a socket path is at most 107 bytes long");
}

TEST(StoreClient, RequestBuilders) {
  EXPECT_EQ(attach_request(3, std::chrono::milliseconds(2500)),
            "{\"op\":\"attach\",\"rank\":3,\"timeout_ms\":2500}");
  EXPECT_EQ(status_request(), "{\"op\":\"status\"}");
}

TEST_F(StoreServerTest, ClientGivesUpAtItsTimeout) {
  start();
  const auto error = thrown<StorageError>(
      [&] { request(socket_path_, attach_request(5, patience), std::chrono::milliseconds(200)); });
  EXPECT_EQ(error.what(), socket_path_.string() + ": no reply within 200 ms");
  EXPECT_TRUE(error.transient());
  // The server saw the client go and let the handler go too.
  hold_.await_cancelled(1);
}

TEST_F(StoreServerTest, AsyncRequestReceivesTheRegions) {
  start();
  ReceivedReply reply = tensorstream::testing::run_task(
      async_request(socket_path_, attach_request(1, patience), patience));
  EXPECT_EQ(reply.json, attach_json(1));
  ASSERT_EQ(reply.fds.size(), 2u);
  EXPECT_EQ(mapped_content(reply.fds[0].get()), weights(1));
  EXPECT_EQ(mapped_content(reply.fds[1].get()), kv_cache(1));
}

TEST_F(StoreServerTest, AsyncRequestReportsErrorsAndTimeouts) {
  using tensorstream::testing::run_task;
  start();
  const std::string path = socket_path_.string();
  const auto refused = thrown<InvalidArgument>(
      [&] { run_task(async_request(socket_path_, attach_request(9, patience), patience)); });
  EXPECT_EQ(refused.what(), path + ": rank 9 is not served");

  const auto late = thrown<StorageError>([&] {
    run_task(
        async_request(socket_path_, attach_request(5, patience), std::chrono::milliseconds(200)));
  });
  EXPECT_EQ(late.what(), path + ": no reply within 200 ms");
  hold_.await_cancelled(1);

  const auto none = dir_.path() / "none.sock";
  const auto missing =
      thrown<StorageError>([&] { run_task(async_request(none, status_request(), patience)); });
  EXPECT_EQ(missing.what(), none.string() + ": no server is listening (no socket file)");
}

TEST_F(StoreServerTest, CancellingAnAsyncRequestClosesTheConnection) {
  start();
  asio::io_context client_io;
  asio::cancellation_signal cancel;
  auto done =
      asio::co_spawn(client_io, async_request(socket_path_, attach_request(5, patience), patience),
                     asio::bind_cancellation_slot(cancel.slot(), asio::use_future));
  std::thread client([&] { client_io.run(); });
  hold_.await_waiting(1);
  // Emitted where the request runs: cancellation slots are not thread-safe.
  asio::post(client_io, [&] { cancel.emit(asio::cancellation_type::terminal); });
  client.join();
  const auto error = thrown<boost::system::system_error>([&] { done.get(); });
  EXPECT_EQ(error.code(), asio::error::operation_aborted);
  hold_.await_cancelled(1);
}

}  // namespace
}  // namespace tensorstream::store::testing
