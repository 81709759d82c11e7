#include "store/message.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>

#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

namespace asio = boost::asio;

[[noreturn]] void throw_errno() {
  throw boost::system::system_error(errno, boost::system::system_category());
}

// Room for the most descriptors one message can carry, aligned as cmsghdr requires.
union ControlBuffer {
  cmsghdr header;
  unsigned char bytes[CMSG_SPACE(sizeof(int) * max_reply_descriptors)];
};

// Waits until `socket` is ready for `events` or `deadline` passes.
void wait_until(int socket, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) throw boost::system::system_error(asio::error::timed_out);
    pollfd entry{socket, events, 0};
    const int timeout = static_cast<int>(
        std::min<std::int64_t>(left.count(), std::numeric_limits<int>::max()));
    const int ready = ::poll(&entry, 1, timeout);
    if (ready > 0) return;  // Errors and hang-ups surface in the next sendmsg/recvmsg.
    if (ready < 0 && errno != EINTR) throw_errno();
  }
}

}  // namespace

MessageSender::MessageSender(std::string_view json, std::span<const int> fds)
    : fds_(fds.begin(), fds.end()) {
  if (json.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw InvalidArgument("a message of " + std::to_string(json.size()) +
                          " bytes does not fit the 4-byte length prefix");
  }
  if (fds.size() > max_reply_descriptors) {
    throw InvalidArgument("a message carries " + std::to_string(fds.size()) +
                          " descriptors; at most " + std::to_string(max_reply_descriptors) +
                          " fit in one");
  }
  const auto length = static_cast<std::uint32_t>(json.size());
  frame_.reserve(4 + json.size());
  for (int shift = 0; shift < 32; shift += 8) frame_ += static_cast<char>((length >> shift) & 0xff);
  frame_ += json;
}

bool MessageSender::send_some(int socket) {
  while (sent_ < frame_.size()) {
    iovec data{frame_.data() + sent_, frame_.size() - sent_};
    msghdr header{};
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    ControlBuffer control;
    if (!fds_.empty()) {
      const std::size_t size = sizeof(int) * fds_.size();
      std::memset(&control, 0, sizeof(control));
      header.msg_control = control.bytes;
      header.msg_controllen = CMSG_SPACE(size);
      cmsghdr* rights = CMSG_FIRSTHDR(&header);
      rights->cmsg_level = SOL_SOCKET;
      rights->cmsg_type = SCM_RIGHTS;
      rights->cmsg_len = CMSG_LEN(size);
      std::memcpy(CMSG_DATA(rights), fds_.data(), size);
    }
    // MSG_NOSIGNAL: a peer that hung up is an EPIPE error here, not a SIGPIPE for the process.
    const ssize_t sent = ::sendmsg(socket, &header, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      throw_errno();
    }
    sent_ += static_cast<std::size_t>(sent);
    // The kernel attached the descriptors to the bytes just sent; the rest goes without.
    fds_.clear();
  }
  return true;
}

bool MessageReceiver::receive_some(int socket) {
  for (;;) {
    iovec data{};
    if (prefix_received_ < sizeof(prefix_)) {
      data = {prefix_ + prefix_received_, sizeof(prefix_) - prefix_received_};
    } else if (body_received_ < body_.size()) {
      data = {body_.data() + body_received_, body_.size() - body_received_};
    } else {
      return true;
    }
    msghdr header{};
    header.msg_iov = &data;
    header.msg_iovlen = 1;
    ControlBuffer control;
    if (takes_descriptors_) {
      header.msg_control = control.bytes;
      header.msg_controllen = sizeof(control.bytes);
    }
    const ssize_t received = ::recvmsg(socket, &header, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (received < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
      throw_errno();
    }
    // Owned before anything else can throw, so that every descriptor received gets closed.
    for (cmsghdr* part = CMSG_FIRSTHDR(&header); part != nullptr;
         part = CMSG_NXTHDR(&header, part)) {
      if (part->cmsg_level != SOL_SOCKET || part->cmsg_type != SCM_RIGHTS) continue;
      const std::size_t count = (part->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (std::size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(part) + i * sizeof(int), sizeof(int));
        fds_.emplace_back(fd);
      }
    }
    if ((header.msg_flags & MSG_CTRUNC) != 0 && !takes_descriptors_) {
      throw FormatError("a request carries no descriptors, and this one came with some");
    }
    if ((header.msg_flags & MSG_CTRUNC) != 0) {
      throw FormatError("a message carried more descriptors than fit in one (at most " +
                        std::to_string(max_reply_descriptors) + ")");
    }
    if (received == 0) throw boost::system::system_error(asio::error::eof);
    if (prefix_received_ < sizeof(prefix_)) {
      prefix_received_ += static_cast<std::size_t>(received);
      if (prefix_received_ < sizeof(prefix_)) continue;
      std::uint32_t length = 0;
      for (int i = 3; i >= 0; --i) length = (length << 8) | prefix_[i];
      if (length > limit_) {
        throw FormatError("a message of " + std::to_string(length) +
                          " bytes exceeds the limit of " + std::to_string(limit_) + " bytes");
      }
      body_.resize(length);
    } else {
      body_received_ += static_cast<std::size_t>(received);
    }
  }
}

void send_message(int socket, std::string_view json, std::span<const int> fds,
                  std::chrono::steady_clock::time_point deadline) {
  MessageSender sender(json, fds);
  while (!sender.send_some(socket)) wait_until(socket, POLLOUT, deadline);
}

Message receive_message(int socket, std::size_t limit,
                        std::chrono::steady_clock::time_point deadline) {
  MessageReceiver receiver(limit);
  while (!receiver.receive_some(socket)) wait_until(socket, POLLIN, deadline);
  return receiver.take();
}

asio::awaitable<void> async_send(asio::local::stream_protocol::socket& socket,
                                 MessageSender& sender) {
  while (!sender.send_some(socket.native_handle())) {
    co_await socket.async_wait(asio::socket_base::wait_write, asio::use_awaitable);
  }
}

asio::awaitable<void> async_receive(asio::local::stream_protocol::socket& socket,
                                    MessageReceiver& receiver) {
  while (!receiver.receive_some(socket.native_handle())) {
    co_await socket.async_wait(asio::socket_base::wait_read, asio::use_awaitable);
  }
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty()) throw InvalidArgument("the socket path is empty");
  if (path.size() >= sizeof(address.sun_path)) {
    throw InvalidArgument(path + ": a socket path is at most " +
                          std::to_string(sizeof(address.sun_path) - 1) + " bytes long");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  return address;
}

PeerCredentials peer_credentials(int socket) {
  ucred credentials{};
  socklen_t size = sizeof(credentials);
  if (::getsockopt(socket, SOL_SOCKET, SO_PEERCRED, &credentials, &size) != 0) throw_errno();
  return {credentials.pid, credentials.uid, credentials.gid};
}

}  // namespace tensorstream::store
