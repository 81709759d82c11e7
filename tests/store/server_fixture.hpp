#pragma once
// A store SocketServer in a scratch directory, run by a thread of its own, with a handler that
// serves two ranks of memfd regions and can be made to wait.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_future.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "store/message.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/socket_server.hpp"
#include "tensorstream/store/unique_fd.hpp"

namespace tensorstream::store::testing {

namespace asio = boost::asio;

/// How long a test waits for something that should happen at once before it fails.
inline constexpr std::chrono::seconds patience{30};

/// Polls `condition` every 5 ms until it holds, and says whether it did before `patience` ran
/// out: a test waits for what it cannot be told of, and fails instead of hanging.
template <class Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

/// A memfd holding `content`.
inline UniqueFd memfd_with(const std::string& content) {
  UniqueFd fd(::memfd_create("store-test", MFD_CLOEXEC));
  if (!fd) throw std::runtime_error("memfd_create failed");
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    throw std::runtime_error("write to a memfd failed");
  }
  return fd;
}

/// A memfd holding `content`, with `seals` added (F_SEAL_SEAL among them, unless none).
inline UniqueFd memfd_sealed_with(const std::string& content, int seals) {
  UniqueFd fd(::memfd_create("store-test-region", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) throw std::runtime_error("memfd_create failed");
  if (::write(fd.get(), content.data(), content.size()) != static_cast<ssize_t>(content.size())) {
    throw std::runtime_error("write to a memfd failed");
  }
  if (seals != 0 && ::fcntl(fd.get(), F_ADD_SEALS, seals | F_SEAL_SEAL) != 0) {
    throw std::runtime_error("sealing a memfd failed");
  }
  return fd;
}

/// A memfd holding `content`, sealed as a store server seals its weights: against every change.
inline UniqueFd sealed_memfd_with(const std::string& content) {
  return memfd_sealed_with(content, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
}

/// A memfd holding `content`, sealed as a store server seals a KV cache: against resizing.
inline UniqueFd size_sealed_memfd_with(const std::string& content) {
  return memfd_sealed_with(content, F_SEAL_SHRINK | F_SEAL_GROW);
}

/// Everything `fd` holds, read through a shared mapping.
inline std::string mapped_content(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0) throw std::runtime_error("fstat failed");
  const auto size = static_cast<std::size_t>(status.st_size);
  if (size == 0) return {};
  void* memory = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (memory == MAP_FAILED) throw std::runtime_error("mmap failed");
  std::string content(static_cast<const char*>(memory), size);
  ::munmap(memory, size);
  return content;
}

/// The number of descriptors this process has open.
inline std::size_t open_descriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    ++count;
  }
  return count - 1;  // The iterator's own.
}

/// A connected socket to `path`, for speaking the protocol byte by byte.
inline UniqueFd connect_raw(const std::filesystem::path& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const sockaddr_un address = unix_address(path.string());
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof(address)) != 0) {
    throw std::runtime_error("connect failed");
  }
  return fd;
}

/// Writes all of `bytes`.
inline void write_raw(int fd, const std::string& bytes) {
  if (::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
    throw std::runtime_error("send failed");
  }
}

/// `json` framed as the protocol sends it.
inline std::string framed(const std::string& json) {
  std::string frame;
  const auto length = static_cast<std::uint32_t>(json.size());
  for (int shift = 0; shift < 32; shift += 8) frame += static_cast<char>((length >> shift) & 0xff);
  return frame + json;
}

/// The server's reply on `fd`, after which the server must have closed the connection.
inline Message reply_then_close(int fd) {
  const auto deadline = std::chrono::steady_clock::now() + patience;
  Message reply = receive_message(fd, 1 << 24, deadline);
  // A server that closes with bytes of ours unread resets the connection instead.
  char extra;
  const ssize_t after = ::recv(fd, &extra, 1, 0);
  EXPECT_TRUE(after == 0 || (after < 0 && errno == ECONNRESET))
      << "the server did not close the connection";
  return reply;
}

/// A copy of the `E` that `action` throws; throws std::logic_error when it throws nothing.
template <class E, class Action>
E thrown(Action&& action) {
  try {
    action();
  } catch (const E& error) {
    return error;
  }
  throw std::logic_error("no exception was thrown");
}

/// Lets test handlers wait until the test releases them, and tells the test who waits.
class Hold {
 public:
  /// Suspends until release(); counts the waiters and the cancelled ones.
  asio::awaitable<void> wait() {
    std::unique_lock lock(mutex_);
    ++waiting_;
    changed_.notify_all();
    try {
      co_await release_.wait(lock, [this] { return released_; });
    } catch (...) {
      ++cancelled_;
      changed_.notify_all();
      throw;
    }
  }

  void release() {
    std::lock_guard lock(mutex_);
    released_ = true;
    release_.notify_all();
  }

  /// Blocks until `count` handlers have started waiting.
  void await_waiting(int count) { await([&] { return waiting_ >= count; }); }

  /// Blocks until `count` waits were cancelled.
  void await_cancelled(int count) { await([&] { return cancelled_ >= count; }); }

 private:
  void await(const std::function<bool()>& condition) {
    std::unique_lock lock(mutex_);
    if (!changed_.wait_for(lock, patience, condition)) {
      throw std::runtime_error("a handler never reached the expected state");
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  async::ConditionVariable release_;
  bool released_ = false;
  int waiting_ = 0;
  int cancelled_ = 0;
};

/// A server on `dir/store.sock`, run by one thread; ranks 0 and 1 each have a read-only
/// "weights" region and a writable "kv_cache" region (memfds with known content).
class StoreServerTest : public ::testing::Test {
 public:
  static std::string weights(int rank) {
    return "weights of rank " + std::to_string(rank) + std::string(5000, 'w');
  }
  static std::string kv_cache(int rank) { return "kv cache of rank " + std::to_string(rank); }

  /// The attach reply the default handler gives for `rank`.
  static std::string attach_json(int rank) {
    return "{\"version\":1,\"rank\":" + std::to_string(rank) +
           ",\"regions\":[{\"name\":\"weights\",\"bytes\":" + std::to_string(weights(rank).size()) +
           ",\"writable\":false,\"fd_index\":0},{\"name\":\"kv_cache\",\"bytes\":" +
           std::to_string(kv_cache(rank).size()) +
           ",\"writable\":true,\"fd_index\":1}],\"manifest\":{\"tensors\":[]}}";
  }

 protected:
  StoreServerTest() : runner_([this] { io_.run(); }) {
    // The reactor opens its descriptors (epoll, eventfd, timerfd) with the first I/O object:
    // before any count of open descriptors.
    asio::steady_timer reactor(io_);
    for (int rank = 0; rank < 2; ++rank) {
      regions_[rank].push_back(sealed_memfd_with(weights(rank)));
      regions_[rank].push_back(size_sealed_memfd_with(kv_cache(rank)));
    }
  }

  ~StoreServerTest() override {
    if (server_) stop();
    work_.reset();
    runner_.join();
  }

  static constexpr const char* status_json = "{\"ranks\":[{\"rank\":0},{\"rank\":1}]}";

  SocketServerOptions options() const {
    SocketServerOptions options;
    options.path = socket_path_;
    return options;
  }

  /// Serves ranks 0 and 1; rank 5 waits on hold_ first; rank 7 has a reply of 8 MiB; rank 9 is
  /// not served (InvalidArgument).
  SocketServer::Handler default_handler() {
    return [this](Request request) -> asio::awaitable<Reply> {
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(request);
      }
      Reply reply;
      if (request.op == Operation::status) {
        reply.json = status_json;
        co_return reply;
      }
      if (request.rank == 5) {
        co_await hold_.wait();
        request.rank = 0;
      }
      if (request.rank == 7) {
        reply.json = "{\"padding\":\"" + std::string(8 << 20, 'p') + "\"}";
        co_return reply;
      }
      if (request.rank > 1) {
        throw InvalidArgument("rank " + std::to_string(request.rank) + " is not served");
      }
      reply.json = attach_json(static_cast<int>(request.rank));
      for (const auto& region : regions_[request.rank]) reply.fds.push_back(region.get());
      co_return reply;
    };
  }

  void start(SocketServerOptions options, SocketServer::Handler handler) {
    server_.emplace(io_.get_executor(), std::move(options), std::move(handler));
  }
  void start() { start(options(), default_handler()); }

  void stop() {
    asio::co_spawn(io_, server_->stop(), asio::use_future).get();
    server_.reset();
  }

  /// The requests the default handler received so far.
  std::vector<Request> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  tensorstream::testing::TempDir dir_;
  std::filesystem::path socket_path_ = dir_.path() / "store.sock";
  asio::io_context io_;
  asio::executor_work_guard<asio::io_context::executor_type> work_{io_.get_executor()};
  std::map<std::uint32_t, std::vector<UniqueFd>> regions_;
  Hold hold_;
  std::optional<SocketServer> server_;

 private:
  std::thread runner_;
  std::mutex mutex_;
  std::vector<Request> requests_;
};

}  // namespace tensorstream::store::testing
