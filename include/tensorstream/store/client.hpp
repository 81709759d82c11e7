#pragma once
/// @file
/// Asking a store server over its Unix socket (docs/spec/store-protocol.md).

#include <sys/types.h>

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/error.hpp"
#include "tensorstream/export.hpp"
#include "tensorstream/store/unique_fd.hpp"

namespace tensorstream::store {

/// The longest reply a client accepts by default (a manifest of a few thousand tensors is well
/// under 1 MiB).
inline constexpr std::size_t default_max_reply_bytes = 16 * 1024 * 1024;

/// A successful reply: its JSON text (an object without "error") and the descriptors that came
/// with it, in fd_index order, close-on-exec and owned by the caller.
struct ReceivedReply {
  std::string json;           ///< The reply's JSON object.
  std::vector<UniqueFd> fds;  ///< The descriptors passed with it.
};

/// A request the server did not take: no socket file yet, nobody listening on it, or the server
/// turned the connection away because it has too many. A server that is starting, restarting
/// or busy takes a later one, so attach() tries again until its timeout. Always transient.
class TENSORSTREAM_API ServerUnavailable : public StorageError {
 public:
  /// `reason`: why, e.g. "no server is listening (no socket file)".
  ServerUnavailable(const std::string& socket_path, const std::string& reason)
      : StorageError(socket_path, reason, true) {}
};

/// The JSON text of an attach request for `rank`, waiting up to `timeout` for it to load.
TENSORSTREAM_API
std::string attach_request(std::uint32_t rank, std::chrono::milliseconds timeout);

/// The JSON text of a status request.
TENSORSTREAM_API
std::string status_request();

/// The JSON text of a reload request: load `source` (empty: the source served now, afresh) and
/// serve it once every rank is loaded. The reply comes when the new generation is served.
TENSORSTREAM_API
std::string reload_request(std::string_view source = {});

/// Sends `request_json` to the server at `socket_path` and returns its reply; blocks the
/// calling thread for at most about `timeout` in all (connecting, sending, waiting for the
/// reply; an attach's own wait counts too, so give more than its timeout_ms).
/// Asks once: see attach() for a caller that waits for a server to come up.
/// @throws ServerUnavailable when no server is listening or it turned the connection away
///   (transient: it may be starting or busy); StorageError naming the path and cause when the
///   connection fails or `timeout` passes; FormatError when the reply
///   is not a JSON object or exceeds `max_reply_bytes`; an error reply as the exception its
///   "kind" names (InvalidArgument, NotFoundError, StorageError, DeadlineExceeded, ...; Error
///   for others) with the message `socket_path: message`. Descriptors that came with a reply
///   that is not returned are closed.
///
/// The server must run as this process's effective uid, as root, or as `server_uid` where
/// given (SO_PEERCRED): a socket in a directory others can write may be answered by anyone,
/// whose reply this would otherwise take. Another is refused, with StorageError
/// (ErrorKind::access_denied), before the request is sent.
TENSORSTREAM_API
ReceivedReply request(const std::filesystem::path& socket_path, std::string_view request_json,
                      std::chrono::milliseconds timeout,
                      std::size_t max_reply_bytes = default_max_reply_bytes,
                      std::optional<uid_t> server_uid = std::nullopt);

/// request() as a coroutine: suspends instead of blocking. Cancelling it closes the connection
/// and throws boost::system::system_error (operation_aborted).
TENSORSTREAM_API
boost::asio::awaitable<ReceivedReply> async_request(
    std::filesystem::path socket_path, std::string request_json, std::chrono::milliseconds timeout,
    std::size_t max_reply_bytes = default_max_reply_bytes,
    std::optional<uid_t> server_uid = std::nullopt);

}  // namespace tensorstream::store
