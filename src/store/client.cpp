#include "tensorstream/store/client.hpp"

#include <simdjson.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <cerrno>
#include <optional>
#include <system_error>
#include <utility>

#include "async/run_on_strand.hpp"
#include "base/json_string.hpp"
#include "store/message.hpp"
#include "store/race.hpp"
#include "store/wire.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

namespace asio = boost::asio;
using Socket = asio::local::stream_protocol::socket;

std::string milliseconds(std::chrono::milliseconds duration) {
  return std::to_string(duration.count()) + " ms";
}

// Throws the failure to connect to the server at `path`.
[[noreturn]] void throw_connect_failure(const std::string& path, int error) {
  switch (error) {
    case ENOENT: throw ServerUnavailable(path, "no server is listening (no socket file)");
    case ECONNREFUSED: throw ServerUnavailable(path, "no server is listening (connection refused)");
    case EAGAIN: throw ServerUnavailable(path, "the server accepts no connection (backlog full)");
    default:
      throw StorageError(
          path, "cannot connect: " + std::error_code(error, std::system_category()).message());
  }
}

StorageError transfer_failure(const std::string& path, const boost::system::error_code& error,
                              std::chrono::milliseconds timeout) {
  if (error == asio::error::timed_out) {
    return StorageError(path, "no reply within " + milliseconds(timeout), true);
  }
  if (error == asio::error::eof) {
    return StorageError(path, "the server closed the connection before the reply was complete",
                        true);
  }
  return StorageError(path, "the connection failed: " + error.message(), true);
}

// Refuses a server that runs as neither this user, root, nor the uid the caller expects.
void check_server(const std::string& path, int socket, std::optional<uid_t> expected) {
  const PeerCredentials server = peer_credentials(socket);
  const uid_t own = ::geteuid();
  if (server.uid == own || server.uid == 0 || (expected && server.uid == *expected)) return;
  throw StorageError(path,
                     "refusing the server: it runs as uid " + std::to_string(server.uid) +
                         ", which is neither this user's (" + std::to_string(own) +
                         "), root's, nor the one given as the server's",
                     false, ErrorKind::access_denied);
}

// A server that answers before reading (a refusal, "too many connections") may close before
// the request is out; its reply is still there to read.
bool answered_early(const boost::system::error_code& error) {
  return error == asio::error::broken_pipe || error == asio::error::connection_reset;
}

// The reply, or its error as the exception it names. Descriptors of a reply that is not
// returned close with `message`.
ReceivedReply checked_reply(const std::string& path, Message message) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(message.json);
  simdjson::dom::object reply;
  if (parser.parse(padded).get_object().get(reply) != simdjson::SUCCESS) {
    throw FormatError(path + ": the reply is not a JSON object");
  }
  simdjson::dom::element error;
  if (reply["error"].get(error) == simdjson::SUCCESS) {
    std::string_view text;
    if (error.get_string().get(text) != simdjson::SUCCESS) {
      throw FormatError(path + ": the reply's \"error\" is not a string");
    }
    std::string_view kind;
    if (reply["kind"].get_string().get(kind) != simdjson::SUCCESS) kind = {};
    bool transient = false;
    if (reply["transient"].get_bool().get(transient) != simdjson::SUCCESS) transient = false;
    bool unavailable = false;
    if (reply["unavailable"].get_bool().get(unavailable) != simdjson::SUCCESS) unavailable = false;
    if (unavailable) throw ServerUnavailable(path, std::string(text));
    throw_error_reply(path, text, kind, transient);
  }
  return {std::move(message.json), std::move(message.fds)};
}

asio::awaitable<void> exchange(Socket& socket, std::string path, std::string_view request_json,
                               std::size_t max_reply_bytes, std::optional<uid_t> server_uid,
                               Message& reply) {
  const asio::local::stream_protocol::endpoint endpoint(path);
  auto [connect_error] =
      co_await socket.async_connect(endpoint, asio::as_tuple(asio::use_awaitable));
  if (connect_error) throw_connect_failure(path, connect_error.value());
  check_server(path, socket.native_handle(), server_uid);
  MessageSender sender(request_json, {});
  try {
    co_await async_send(socket, sender);
  } catch (const boost::system::system_error& error) {
    if (!answered_early(error.code())) throw;
  }
  MessageReceiver receiver(max_reply_bytes);
  co_await async_receive(socket, receiver);
  reply = receiver.take();
}

asio::awaitable<ReceivedReply> request_on_strand(std::string path, std::string request_json,
                                                 std::chrono::milliseconds timeout,
                                                 std::size_t max_reply_bytes,
                                                 std::optional<uid_t> server_uid) {
  unix_address(path);  // Names a path too long for an address before asio truncates it.
  const auto strand = co_await asio::this_coro::executor;
  Socket socket(strand);
  Message reply;
  bool replied = false;
  std::optional<boost::system::error_code> failure;
  try {
    auto exchanging = exchange(socket, path, request_json, max_reply_bytes, server_uid, reply);
    asio::steady_timer deadline(strand, timeout);
    replied = co_await finishes_first(std::move(exchanging), deadline.async_wait(asio::deferred));
  } catch (const boost::system::system_error& error) {
    failure = error.code();
  } catch (const FormatError& error) {
    throw FormatError(path + ": " + error.what());
  }
  if (failure) {
    const auto state = co_await asio::this_coro::cancellation_state;
    if (state.cancelled() != asio::cancellation_type::none) {
      throw boost::system::system_error(asio::error::operation_aborted);
    }
    throw transfer_failure(path, *failure, timeout);
  }
  if (!replied) throw transfer_failure(path, asio::error::timed_out, timeout);
  co_return checked_reply(path, std::move(reply));
}

}  // namespace

std::string attach_request(std::uint32_t rank, std::chrono::milliseconds timeout) {
  return "{\"op\":\"attach\",\"rank\":" + std::to_string(rank) +
         ",\"timeout_ms\":" + std::to_string(timeout.count()) + "}";
}

std::string status_request() { return "{\"op\":\"status\"}"; }

std::string reload_request(std::string_view source) {
  if (source.empty()) return "{\"op\":\"reload\"}";
  return "{\"op\":\"reload\",\"source\":" + json_string(source) + "}";
}

ReceivedReply request(const std::filesystem::path& socket_path, std::string_view request_json,
                      std::chrono::milliseconds timeout, std::size_t max_reply_bytes,
                      std::optional<uid_t> server_uid) {
  const std::string path = socket_path.string();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const sockaddr_un address = unix_address(path);
  const UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!socket) {
    throw StorageError(path, "cannot create a socket: " +
                                 std::error_code(errno, std::system_category()).message());
  }
  // connect() on a Unix socket blocks only while the server's backlog is full, for at most
  // SO_SNDTIMEO (zero would mean forever).
  const auto connect_limit = std::max(timeout, std::chrono::milliseconds(1));
  const timeval limit{static_cast<time_t>(connect_limit.count() / 1000),
                      static_cast<suseconds_t>(connect_limit.count() % 1000 * 1000)};
  ::setsockopt(socket.get(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit));
  if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    throw_connect_failure(path, errno);
  }
  check_server(path, socket.get(), server_uid);
  Message reply;
  try {
    try {
      send_message(socket.get(), request_json, {}, deadline);
    } catch (const boost::system::system_error& error) {
      if (!answered_early(error.code())) throw;
    }
    reply = receive_message(socket.get(), max_reply_bytes, deadline);
  } catch (const boost::system::system_error& error) {
    throw transfer_failure(path, error.code(), timeout);
  } catch (const FormatError& error) {
    throw FormatError(path + ": " + error.what());
  }
  return checked_reply(path, std::move(reply));
}

asio::awaitable<ReceivedReply> async_request(std::filesystem::path socket_path,
                                             std::string request_json,
                                             std::chrono::milliseconds timeout,
                                             std::size_t max_reply_bytes,
                                             std::optional<uid_t> server_uid) {
  auto strand = asio::make_strand(co_await asio::this_coro::executor);
  auto requesting = request_on_strand(socket_path.string(), std::move(request_json), timeout,
                                      max_reply_bytes, server_uid);
  co_return co_await async::run_on_strand(std::move(strand), std::move(requesting));
}

}  // namespace tensorstream::store
