#include "tensorstream/store/socket_server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cerrno>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "async/run_on_strand.hpp"
#include "store/message.hpp"
#include "store/race.hpp"
#include "store/wire.hpp"
#include "tensorstream/async/gate.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/store/unique_fd.hpp"

namespace tensorstream::store {
namespace {

namespace asio = boost::asio;
using Socket = asio::local::stream_protocol::socket;

std::string errno_message() { return std::error_code(errno, std::system_category()).message(); }

Reply error_only(std::string_view message, ErrorKind kind) {
  Reply reply;
  reply.json = error_reply(message, kind);
  return reply;
}

// Refuses a path whose directory would let another user swap the socket file underneath us.
void check_directory(const std::string& path, const std::filesystem::path& directory) {
  struct stat status {};
  if (::stat(directory.c_str(), &status) != 0) {
    throw InvalidArgument(path + ": cannot use directory " + directory.string() + ": " +
                          errno_message());
  }
  if (!S_ISDIR(status.st_mode)) {
    throw InvalidArgument(path + ": " + directory.string() + " is not a directory");
  }
  if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (status.st_mode & S_ISVTX) == 0) {
    throw InvalidArgument(path + ": directory " + directory.string() +
                          " is writable by other users; put the socket in a directory only the "
                          "server's user can write");
  }
  // Its owner could replace the socket with one of its own at any time.
  if (status.st_uid != ::geteuid() && status.st_uid != 0) {
    throw InvalidArgument(path + ": directory " + directory.string() + " belongs to uid " +
                          std::to_string(status.st_uid) +
                          "; put the socket in a directory of the server's user or root");
  }
}

// Removes a socket file nobody listens on; refuses a live one and anything not a socket.
void replace_stale_socket(const std::string& path) {
  struct stat status {};
  if (::lstat(path.c_str(), &status) != 0) {
    if (errno == ENOENT) return;
    throw StorageError(path, "cannot check the path: " + errno_message());
  }
  if (!S_ISSOCK(status.st_mode)) throw InvalidArgument(path + ": exists and is not a socket");
  const UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!probe) throw StorageError(path, "cannot create a socket: " + errno_message());
  const sockaddr_un address = unix_address(path);
  // EAGAIN: a listener whose backlog is full, alive all the same.
  if (::connect(probe.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) == 0 ||
      errno == EAGAIN) {
    throw StateError(path + ": another server is listening on this socket");
  }
  if (errno != ECONNREFUSED) {
    throw StorageError(path, "cannot check the existing socket: " + errno_message());
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    throw StorageError(path, "cannot remove the stale socket: " + errno_message());
  }
}

// Who may connect() to the socket file, which needs write permission on it: the server's user
// alone unless the policy names others. SO_PEERCRED then decides who is served, so the file
// opens to the one group the policy names, or to everyone where it names uids or several groups.
struct Access {
  mode_t mode = S_IRUSR | S_IWUSR;
  std::optional<gid_t> group;
};

Access socket_access(const SocketServerOptions& options) {
  if (!options.allowed_uids.empty() || options.allowed_gids.size() > 1) {
    return {S_IRUSR | S_IWUSR | S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH, std::nullopt};
  }
  if (options.allowed_gids.size() == 1) {
    return {S_IRUSR | S_IWUSR | S_IRGRP | S_IWGRP, options.allowed_gids.front()};
  }
  return {};
}

}  // namespace

namespace detail {

struct SocketServerState {
  using Handler = SocketServer::Handler;

  SocketServerState(asio::any_io_executor executor, SocketServerOptions options, Handler handler)
      : strand(asio::make_strand(std::move(executor))), options(std::move(options)),
        path(this->options.path.string()), handler(std::move(handler)), acceptor(strand),
        own_uid(::geteuid()) {}

  asio::strand<asio::any_io_executor> strand;
  const SocketServerOptions options;
  const std::string path;
  const Handler handler;
  asio::local::stream_protocol::acceptor acceptor;
  const uid_t own_uid;
  async::Gate gate;

  // The socket file this server created, removed once.
  std::mutex file_mutex;
  dev_t device = 0;
  ino_t inode = 0;
  bool file_removed = false;

  // Touched on the strand only.
  bool accepting = true;
  bool stopping = false;
  asio::cancellation_signal accept_cancel;
  std::uint64_t next_connection = 0;
  std::map<std::uint64_t, std::shared_ptr<asio::cancellation_signal>> connections;
  std::map<pid_t, std::size_t> connections_by_process;

  void bind() {
    const sockaddr_un address = unix_address(path);
    std::filesystem::path directory = options.path.parent_path();
    if (directory.empty()) directory = ".";
    check_directory(path, directory);
    replace_stale_socket(path);
    boost::system::error_code error;
    acceptor.open(asio::local::stream_protocol(), error);
    if (error) throw StorageError(path, "cannot create a socket: " + error.message());
    // bind() gives the file the socket inode's mode: set before, so that no one the policy
    // leaves out can connect in between (the umask only takes permissions away).
    const Access access = socket_access(options);
    if (::fchmod(acceptor.native_handle(), access.mode) != 0) {
      throw StorageError(path, "cannot set the socket's mode: " + errno_message());
    }
    if (::bind(acceptor.native_handle(), reinterpret_cast<const sockaddr*>(&address),
               sizeof(address)) != 0) {
      throw StorageError(path, "cannot bind the socket: " + errno_message());
    }
    // The umask may have taken away what the policy opens: group first, then the mode.
    if (access.mode != (S_IRUSR | S_IWUSR)) {
      const bool given =
          (!access.group || ::lchown(path.c_str(), static_cast<uid_t>(-1), *access.group) == 0) &&
          ::chmod(path.c_str(), access.mode) == 0;
      if (!given) {
        const std::string reason = errno_message();
        ::unlink(path.c_str());
        throw StorageError(path, "cannot open the socket to the allowed users and groups: " +
                                     reason);
      }
    }
    struct stat status {};
    if (::lstat(path.c_str(), &status) == 0) {
      device = status.st_dev;
      inode = status.st_ino;
    }
    acceptor.listen(asio::socket_base::max_listen_connections, error);
    if (error) {
      remove_socket_file();
      throw StorageError(path, "cannot listen on the socket: " + error.message());
    }
  }

  // Only the file this server bound: a successor may have replaced it after a crash of ours.
  void remove_socket_file() noexcept {
    std::lock_guard lock(file_mutex);
    if (std::exchange(file_removed, true)) return;
    struct stat status {};
    if (::lstat(path.c_str(), &status) == 0 && status.st_dev == device &&
        status.st_ino == inode) {
      ::unlink(path.c_str());
    }
  }

  bool allows(const PeerCredentials& peer) const {
    return (options.allow_own_uid && peer.uid == own_uid) ||
           std::find(options.allowed_uids.begin(), options.allowed_uids.end(), peer.uid) !=
               options.allowed_uids.end() ||
           std::find(options.allowed_gids.begin(), options.allowed_gids.end(), peer.gid) !=
               options.allowed_gids.end();
  }

  // On the strand: no new connections; those under way go on.
  void stop_accepting() {
    accepting = false;
    boost::system::error_code ignored;
    acceptor.close(ignored);
    accept_cancel.emit(asio::cancellation_type::terminal);
  }

  // On the strand.
  void close_all() {
    stopping = true;
    stop_accepting();
    std::vector<std::shared_ptr<asio::cancellation_signal>> signals;
    for (const auto& entry : connections) signals.push_back(entry.second);
    for (const auto& signal : signals) signal->emit(asio::cancellation_type::terminal);
  }
};

}  // namespace detail

namespace {

using State = detail::SocketServerState;

asio::awaitable<void> run_handler(const SocketServer::Handler& handler, Request request,
                                  Reply& reply) {
  auto answering = handler(std::move(request));
  reply = co_await std::move(answering);
}

// The reply to the connection's request, or nothing when the client hung up while the handler
// worked.
asio::awaitable<std::optional<Reply>> answer(State& state, Socket& socket,
                                             const PeerCredentials& peer) {
  if (!state.allows(peer)) {
    log(LogLevel::info, [&] {
      return state.path + ": refused pid " + std::to_string(peer.pid) + " (uid " +
             std::to_string(peer.uid) + ", gid " + std::to_string(peer.gid) + ")";
    });
    co_return error_only("uid " + std::to_string(peer.uid) + " is not allowed to attach",
                         ErrorKind::access_denied);
  }

  MessageReceiver receiver(max_request_bytes, false);
  std::string invalid;
  try {
    auto receiving = async_receive(socket, receiver);
    asio::steady_timer deadline(state.strand, state.options.request_timeout);
    if (!co_await finishes_first(std::move(receiving), deadline.async_wait(asio::deferred))) {
      co_return error_only("no complete request within " +
                               std::to_string(state.options.request_timeout.count()) + " ms",
                           ErrorKind::deadline_exceeded);
    }
  } catch (const FormatError& error) {
    invalid = error.what();
  }
  if (!invalid.empty()) co_return error_only(invalid, ErrorKind::invalid_argument);

  Request request;
  try {
    request = parse_request(receiver.take().json);
  } catch (const InvalidArgument& error) {
    invalid = error.what();
  }
  if (!invalid.empty()) co_return error_only(invalid, ErrorKind::invalid_argument);
  request.peer = peer;

  Reply reply;
  std::exception_ptr failure;
  try {
    auto answering = run_handler(state.handler, std::move(request), reply);
    // The client sends nothing more: a hang-up (not a shutdown of its writing side, which
    // only makes the socket readable) is the only way the socket reports an event here.
    auto hang_up = socket.async_wait(asio::socket_base::wait_error, asio::deferred);
    if (!co_await finishes_first(std::move(answering), std::move(hang_up))) co_return std::nullopt;
  } catch (...) {
    failure = std::current_exception();
  }
  if (state.stopping) throw boost::system::system_error(asio::error::operation_aborted);
  if (failure) {
    reply = Reply{};
    reply.json = error_reply(failure);
  }
  co_return reply;
}

asio::awaitable<void> serve(State& state, Socket& socket, const PeerCredentials& peer) {
  std::optional<Reply> reply = co_await answer(state, socket, peer);
  if (!reply) co_return;
  std::optional<MessageSender> sender;
  try {
    sender.emplace(reply->json, reply->fds);
  } catch (const InvalidArgument& error) {
    sender.emplace(error_reply(error.what(), ErrorKind::other), std::span<const int>());
  }
  auto sending = async_send(socket, *sender);
  asio::steady_timer deadline(state.strand, state.options.reply_timeout);
  if (!co_await finishes_first(std::move(sending), deadline.async_wait(asio::deferred))) {
    log(LogLevel::debug, [&] {
      return state.path + ": pid " + std::to_string(peer.pid) + " took no reply within " +
             std::to_string(state.options.reply_timeout.count()) + " ms";
    });
  }
}

asio::awaitable<void> connection(std::shared_ptr<State> state, Socket socket,
                                 PeerCredentials peer) {
  // stop() may have run between the accept and this start; it waits only for what entered.
  if (state->stopping) co_return;
  const async::Gate::Holder holder(state->gate);
  try {
    co_await serve(*state, socket, peer);
  } catch (const std::exception& error) {
    // Hang-ups, resets, stop(): the connection is over either way.
    log(LogLevel::debug,
        [&] { return state->path + ": connection closed: " + std::string(error.what()); });
  }
  boost::system::error_code ignored;
  socket.close(ignored);
}

void spawn_connection(const std::shared_ptr<State>& state, Socket socket,
                      const PeerCredentials& peer) {
  const std::uint64_t id = state->next_connection++;
  auto signal = std::make_shared<asio::cancellation_signal>();
  state->connections.emplace(id, signal);
  ++state->connections_by_process[peer.pid];
  // The handler holds the signal: co_spawn in Boost 1.81 may touch the slot until it ran.
  auto finished = [state, id, signal, pid = peer.pid](const std::exception_ptr&) {
    state->connections.erase(id);
    const auto process = state->connections_by_process.find(pid);
    if (--process->second == 0) state->connections_by_process.erase(process);
  };
  asio::co_spawn(state->strand, connection(state, std::move(socket), peer),
                 asio::bind_cancellation_slot(
                     signal->slot(), asio::bind_executor(state->strand, std::move(finished))));
}

// The reason to turn a new connection from `peer` away, if any.
std::optional<std::string> too_many(const State& state, const PeerCredentials& peer) {
  if (state.connections.size() >= state.options.max_connections) {
    return "too many connections (at most " + std::to_string(state.options.max_connections) + ")";
  }
  const auto process = state.connections_by_process.find(peer.pid);
  if (process != state.connections_by_process.end() &&
      process->second >= state.options.max_connections_per_process) {
    return "too many connections from process " + std::to_string(peer.pid) + " (at most " +
           std::to_string(state.options.max_connections_per_process) + ")";
  }
  return std::nullopt;
}

// One over a limit gets its error without a coroutine: the reply is small and the new socket's
// buffer empty, so one non-blocking send delivers it.
void refuse_busy(Socket& socket, const std::string& reason) {
  const std::string reply = unavailable_reply(reason);
  try {
    MessageSender sender(reply, {});
    sender.send_some(socket.native_handle());
  } catch (const boost::system::system_error&) {
    // The client is gone already.
  }
}

asio::awaitable<void> accept_loop(std::shared_ptr<State> state) {
  if (!state->accepting) co_return;
  const async::Gate::Holder holder(state->gate);
  for (;;) {
    auto [error, socket] =
        co_await state->acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (!state->accepting) co_return;
    if (error) {
      log(LogLevel::warning, state->path + ": accepting a connection failed: " + error.message());
      // Descriptor exhaustion leaves the connection queued: pause rather than spin on it.
      asio::steady_timer pause(state->strand, std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::use_awaitable);
      continue;
    }
    PeerCredentials peer;
    try {
      peer = peer_credentials(socket.native_handle());
    } catch (const boost::system::system_error&) {
      continue;  // Gone already.
    }
    if (const auto reason = too_many(*state, peer)) {
      refuse_busy(socket, *reason);
      continue;
    }
    spawn_connection(state, std::move(socket), peer);
  }
}

asio::awaitable<void> close_and_wait(std::shared_ptr<State> state,
                                     std::chrono::milliseconds grace) {
  if (grace.count() > 0) {
    state->stop_accepting();
    asio::steady_timer deadline(state->strand, grace);
    if (co_await finishes_first(state->gate.close(), deadline.async_wait(asio::deferred))) {
      co_return;
    }
  }
  state->close_all();
  co_await state->gate.close();
}

}  // namespace

SocketServer::SocketServer(asio::any_io_executor executor, SocketServerOptions options,
                           Handler handler) {
  if (!handler) throw InvalidArgument("the store server needs a request handler");
  if (options.max_connections == 0 || options.max_connections_per_process == 0) {
    throw InvalidArgument(options.path.string() +
                          ": max_connections and max_connections_per_process must be at least 1");
  }
  state_ = std::make_shared<State>(std::move(executor), std::move(options), std::move(handler));
  state_->bind();
  asio::co_spawn(state_->strand, accept_loop(state_),
                 asio::bind_cancellation_slot(
                     state_->accept_cancel.slot(),
                     asio::bind_executor(state_->strand, [](const std::exception_ptr&) {})));
}

SocketServer::~SocketServer() {
  state_->remove_socket_file();
  asio::post(state_->strand, [state = state_] { state->close_all(); });
}

const std::filesystem::path& SocketServer::path() const noexcept { return state_->options.path; }

asio::awaitable<void> SocketServer::stop(std::chrono::milliseconds grace) {
  state_->remove_socket_file();
  auto strand = state_->strand;
  auto closing = close_and_wait(state_, grace);
  co_await async::run_on_strand(std::move(strand), std::move(closing));
}

}  // namespace tensorstream::store
