#include "store/message.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
#include <string>
#include <thread>
#include <utility>

#include "store/server_fixture.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store::testing {
namespace {

std::pair<UniqueFd, UniqueFd> socket_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) {
    throw std::runtime_error("socketpair failed");
  }
  return {UniqueFd(fds[0]), UniqueFd(fds[1])};
}

std::chrono::steady_clock::time_point later() {
  return std::chrono::steady_clock::now() + patience;
}

TEST(StoreMessage, ArrivesWholeFromSingleBytes) {
  auto [sender, receiver] = socket_pair();
  const std::string frame = framed("{\"op\":\"status\"}");
  MessageReceiver message(1024);
  for (const char byte : frame) {
    EXPECT_FALSE(message.receive_some(receiver.get()));
    write_raw(sender.get(), std::string(1, byte));
  }
  EXPECT_TRUE(message.receive_some(receiver.get()));
  EXPECT_EQ(message.take().json, "{\"op\":\"status\"}");
}

TEST(StoreMessage, ReadsNothingPastItsEnd) {
  auto [sender, receiver] = socket_pair();
  write_raw(sender.get(), framed("{\"first\":1}") + framed("{\"second\":2}"));
  EXPECT_EQ(receive_message(receiver.get(), 1024, later()).json, "{\"first\":1}");
  EXPECT_EQ(receive_message(receiver.get(), 1024, later()).json, "{\"second\":2}");
}

TEST(StoreMessage, DescriptorsRideOnTheFirstBytes) {
  auto [sender, receiver] = socket_pair();
  const UniqueFd first = memfd_with("first region");
  const UniqueFd second = memfd_with("second region");
  const int fds[] = {first.get(), second.get()};
  send_message(sender.get(), "{\"regions\":2}", fds, later());
  Message message = receive_message(receiver.get(), 1024, later());
  EXPECT_EQ(message.json, "{\"regions\":2}");
  ASSERT_EQ(message.fds.size(), 2u);
  EXPECT_EQ(mapped_content(message.fds[0].get()), "first region");
  EXPECT_EQ(mapped_content(message.fds[1].get()), "second region");
}

TEST(StoreMessage, LargeMessageCrossesAFullSocketBuffer) {
  auto [sender, receiver] = socket_pair();
  const std::string json = "\"" + std::string(4 << 20, 'x') + "\"";
  const UniqueFd region = memfd_with("region");
  std::thread sending([&, fd = sender.get()] {
    const int fds[] = {region.get()};
    send_message(fd, json, fds, later());
  });
  Message message = receive_message(receiver.get(), 8 << 20, later());
  sending.join();
  EXPECT_EQ(message.json, json);
  ASSERT_EQ(message.fds.size(), 1u);
  EXPECT_EQ(mapped_content(message.fds[0].get()), "region");
}

TEST(StoreMessage, LengthOverTheLimitIsAFormatError) {
  auto [sender, receiver] = socket_pair();
  write_raw(sender.get(), framed(std::string(65, 'x')));
  const auto error = thrown<FormatError>([&] { receive_message(receiver.get(), 64, later()); });
  EXPECT_STREQ(error.what(), "a message of 65 bytes exceeds the limit of 64 bytes");
}

TEST(StoreMessage, HangUpBeforeTheEndIsEof) {
  for (const std::size_t cut : {0, 2, 4, 9}) {
    auto [sender, receiver] = socket_pair();
    write_raw(sender.get(), framed("{\"op\":\"status\"}").substr(0, cut));
    sender.reset();
    const auto error = thrown<boost::system::system_error>(
        [&] { receive_message(receiver.get(), 1024, later()); });
    EXPECT_EQ(error.code(), boost::asio::error::eof) << cut;
  }
}

TEST(StoreMessage, ReceiveGivesUpAtTheDeadline) {
  auto [sender, receiver] = socket_pair();
  write_raw(sender.get(), "\x05");
  const auto error = thrown<boost::system::system_error>([&] {
    receive_message(receiver.get(), 1024,
                    std::chrono::steady_clock::now() + std::chrono::milliseconds(20));
  });
  EXPECT_EQ(error.code(), boost::asio::error::timed_out);
}

TEST(StoreMessage, SendToAClosedPeerIsAnErrorNotASignal) {
  auto [sender, receiver] = socket_pair();
  receiver.reset();
  const auto error =
      thrown<boost::system::system_error>([&] { send_message(sender.get(), "{}", {}, later()); });
  EXPECT_EQ(error.code(), boost::asio::error::broken_pipe);
}

TEST(StoreMessage, TooManyDescriptorsAreRefusedBeforeSending) {
  const std::vector<int> fds(max_reply_descriptors + 1, 0);
  const auto error = thrown<InvalidArgument>([&] { MessageSender sender("{}", fds); });
  EXPECT_STREQ(error.what(), "a message carries 254 descriptors; at most 253 fit in one");
}

TEST(StoreMessage, PeerCredentialsAreThisProcess) {
  auto [one, other] = socket_pair();
  const PeerCredentials peer = peer_credentials(one.get());
  EXPECT_EQ(peer.pid, ::getpid());
  EXPECT_EQ(peer.uid, ::geteuid());
  EXPECT_EQ(peer.gid, ::getegid());
}

TEST(StoreMessage, UniqueFdClosesWhatItOwns) {
  int raw = -1;
  {
    UniqueFd owner = memfd_with("x");
    raw = owner.get();
    UniqueFd moved = std::move(owner);
    EXPECT_FALSE(owner);
    EXPECT_EQ(moved.get(), raw);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);
  UniqueFd kept = memfd_with("y");
  const int released = kept.release();
  EXPECT_FALSE(kept);
  EXPECT_NE(::fcntl(released, F_GETFD), -1);
  ::close(released);
}

}  // namespace
}  // namespace tensorstream::store::testing
