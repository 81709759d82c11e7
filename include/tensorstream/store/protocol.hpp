#pragma once
/// @file
/// The store server's wire protocol, as the server's handler sees it. docs/spec/store-protocol.md
/// describes the bytes on the socket.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tensorstream::store {

/// The largest request the server reads, length prefix excluded; a longer one gets an error.
inline constexpr std::size_t max_request_bytes = 64 * 1024;

/// The most descriptors one reply may carry (the kernel's SCM_MAX_FD).
inline constexpr std::size_t max_reply_descriptors = 253;

/// How long an attach waits for a rank that is still loading when the request does not say.
inline constexpr std::chrono::milliseconds default_attach_timeout{60'000};

/// The longest `timeout_ms` a request may give.
inline constexpr std::chrono::milliseconds max_attach_timeout{86'400'000};

/// Who is at the other end of a connection, as the kernel reports it (SO_PEERCRED): the
/// credentials of the process that connected, at the time it connected.
struct PeerCredentials {
  pid_t pid = 0;  ///< Process id.
  uid_t uid = 0;  ///< Effective user id.
  gid_t gid = 0;  ///< Effective group id.
};

/// What a request asks for.
enum class Operation {
  attach,  ///< A rank's manifest and region descriptors.
  status,  ///< The server's state; no descriptors.
  reload,  ///< Load the checkpoint again (or another) and serve it once loaded; no descriptors.
};

/// A validated request, as the server hands it to its handler.
struct Request {
  Operation op = Operation::status;  ///< What is asked.
  std::uint32_t rank = 0;            ///< The rank to attach (attach only).
  /// How long the handler may wait for the rank to be ready (attach only).
  std::chrono::milliseconds timeout = default_attach_timeout;
  /// What to load (reload only); empty: the source served now, read afresh.
  std::string source;
  PeerCredentials peer;  ///< Who asked.
};

/// A handler's answer to a request.
struct Reply {
  /// The reply's JSON text, one object, sent as it is.
  std::string json;
  /// Descriptors passed to the client with the reply, in this order (fd_index 0, 1, ...). They
  /// are borrowed: the server keeps ownership and must keep them open until the reply is sent.
  std::vector<int> fds;
};

}  // namespace tensorstream::store
