#pragma once
// Framed messages on a Unix stream socket: a 4-byte little-endian length, that many bytes of
// JSON, and descriptors (SCM_RIGHTS) riding on the first bytes. The sender and receiver below do
// the non-blocking part; blocking callers poll() around them, coroutines wait on the socket.

#include <sys/un.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/store/protocol.hpp"
#include "tensorstream/store/unique_fd.hpp"

namespace tensorstream::store {

/// One received message: its JSON text and the descriptors that came with it, now owned here.
struct Message {
  std::string json;
  std::vector<UniqueFd> fds;
};

/// Sends one message in as many pieces as the socket takes.
class MessageSender {
 public:
  /// @param fds sent with the first bytes; borrowed until the send is complete.
  /// @throws InvalidArgument when `json` does not fit the length prefix or `fds` holds more than
  ///   max_reply_descriptors.
  MessageSender(std::string_view json, std::span<const int> fds);

  /// Sends what the socket accepts now, without blocking and without SIGPIPE.
  /// @returns whether the whole message is sent.
  /// @throws boost::system::system_error on a socket error (EPIPE when the peer is gone).
  bool send_some(int socket);

 private:
  std::string frame_;
  std::size_t sent_ = 0;
  std::vector<int> fds_;
};

/// Receives one message, reading exactly its bytes and nothing after them.
class MessageReceiver {
 public:
  /// @param limit the longest JSON text accepted.
  /// @param takes_descriptors whether descriptors may come with the message (a reply's). Where
  ///   not (a request, on the server), the receiver offers no room for any: the kernel closes
  ///   whatever a peer sends before it reaches this process, and the message is refused, so no
  ///   peer can fill the server's descriptor table.
  explicit MessageReceiver(std::size_t limit, bool takes_descriptors = true)
      : limit_(limit), takes_descriptors_(takes_descriptors) {}

  /// Receives what is available now, without blocking; descriptors arrive close-on-exec.
  /// @returns whether the whole message is here.
  /// @throws FormatError when the length prefix is over the limit, descriptors were lost, or
  ///   came where none are taken; boost::system::system_error on a socket error, or `eof` when
  ///   the peer closed first.
  bool receive_some(int socket);

  /// The complete message; call once receive_some() returned true.
  Message take() { return {std::move(body_), std::move(fds_)}; }

 private:
  std::size_t limit_;
  bool takes_descriptors_;
  unsigned char prefix_[4] = {};
  std::size_t prefix_received_ = 0;
  std::string body_;
  std::size_t body_received_ = 0;
  std::vector<UniqueFd> fds_;
};

/// Sends a message on a blocking or non-blocking socket, giving up at `deadline`.
/// @throws boost::system::system_error (`timed_out` at the deadline) or what MessageSender throws.
void send_message(int socket, std::string_view json, std::span<const int> fds,
                  std::chrono::steady_clock::time_point deadline);

/// Receives a message of at most `limit` bytes, giving up at `deadline`.
/// @throws boost::system::system_error (`timed_out` at the deadline) or what MessageReceiver
///   throws.
Message receive_message(int socket, std::size_t limit,
                        std::chrono::steady_clock::time_point deadline);

/// Sends `sender`'s message on `socket`, waiting for room as needed; no deadline of its own.
boost::asio::awaitable<void> async_send(boost::asio::local::stream_protocol::socket& socket,
                                        MessageSender& sender);

/// Receives into `receiver` from `socket`, waiting for bytes as needed; no deadline of its own.
boost::asio::awaitable<void> async_receive(boost::asio::local::stream_protocol::socket& socket,
                                           MessageReceiver& receiver);

/// The address of the Unix socket at `path`.
/// @throws InvalidArgument when the path is empty or longer than an address holds.
sockaddr_un unix_address(const std::string& path);

/// The credentials of the process at the other end of a connected Unix socket (SO_PEERCRED).
/// @throws boost::system::system_error
PeerCredentials peer_credentials(int socket);

}  // namespace tensorstream::store
