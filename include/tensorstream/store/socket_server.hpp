#pragma once
/// @file
/// The store server's transport: a Unix socket that answers attach and status requests with
/// JSON and passes descriptors (SCM_RIGHTS). What a reply holds is the handler's business.

#include <sys/types.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/store/protocol.hpp"

namespace tensorstream::store {

namespace detail {
struct SocketServerState;
}  // namespace detail

/// How a SocketServer listens and whom it serves.
struct SocketServerOptions {
  /// The socket's path. Its directory must exist and must not be writable by other users
  /// (unless sticky, as /tmp): a directory the server's user owns, such as $XDG_RUNTIME_DIR.
  std::filesystem::path path;
  /// Whether peers running as the server's own effective uid may connect.
  bool allow_own_uid = true;
  /// Further uids whose processes may connect.
  std::vector<uid_t> allowed_uids;
  /// Groups whose processes may connect: the peer's effective gid must be one of them
  /// (supplementary groups are not visible through SO_PEERCRED).
  std::vector<gid_t> allowed_gids;
  /// Connections served at once; one more gets a "too many connections" error.
  std::size_t max_connections = 64;
  /// Connections of one process served at once (a worker needs one per attach), so that one
  /// process cannot hold them all; one more gets a "too many connections from process" error.
  std::size_t max_connections_per_process = 8;
  /// How long a client has to send its whole request after connecting.
  std::chrono::milliseconds request_timeout{5'000};
  /// How long a client has to take the whole reply once it is ready.
  std::chrono::milliseconds reply_timeout{5'000};
};

/// Serves requests on a Unix stream socket, one request per connection
/// (docs/spec/store-protocol.md): checks the peer's credentials, reads the request within a
/// deadline, validates it, asks the handler for the reply, sends it with its descriptors and closes
/// the connection. Malformed requests get an error reply; nothing a client does stops the server or
/// leaks a descriptor.
///
/// Everything runs on a strand of the executor given; the handler is called there and may
/// suspend for as long as it needs (e.g. until a rank is loaded). It is cancelled when the
/// server stops and when the client hangs up. Whatever the handler uses must outlive the
/// connections: co_await stop() before destroying it.
class TENSORSTREAM_API SocketServer {
 public:
  /// Produces the reply to a valid request. An exception becomes an error reply with its
  /// message (and a "kind" from its type, see error.hpp).
  using Handler = std::function<boost::asio::awaitable<Reply>(Request)>;

  /// Binds the socket and starts accepting on `executor`. The socket file is mode 0600 unless the
  /// policy names others: 0660 and the group's where it names one gid alone, 0666 where it names
  /// uids or several gids (whom connect() must reach; SO_PEERCRED then decides). Its directory
  /// must let them in (search permission). A stale socket file at the
  /// path (no server behind it) is replaced.
  /// @throws InvalidArgument for an unusable path or directory, or an empty handler;
  ///   StateError when another server is listening on the path; StorageError when the socket
  ///   cannot be created.
  SocketServer(boost::asio::any_io_executor executor, SocketServerOptions options,
               Handler handler);

  /// Stops as stop() does, without waiting for connections to finish: they end as the executor
  /// runs their cancellations. The socket file is removed before this returns.
  ~SocketServer();

  SocketServer(const SocketServer&) = delete;
  SocketServer& operator=(const SocketServer&) = delete;

  /// The socket's path.
  const std::filesystem::path& path() const noexcept;

  /// Stops accepting, removes the socket file (if it is still the one this server created),
  /// lets the connections under way finish for up to `grace` (their handlers answer, their
  /// replies go out), then cancels the rest, handlers included, and waits until all have
  /// closed. Replies not yet sent then are not sent. Calling it again waits again; any thread
  /// may call it.
  boost::asio::awaitable<void> stop(std::chrono::milliseconds grace = {});

 private:
  std::shared_ptr<detail::SocketServerState> state_;
};

}  // namespace tensorstream::store
