#pragma once
/// @file
/// The store server: loads the ranks of a checkpoint once into shared memory and hands them to
/// worker processes over a Unix socket (docs/store-server.md).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/store/rank_layout.hpp"
#include "tensorstream/store/socket_server.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::store {

namespace detail {
struct StoreServerState;
}  // namespace detail

/// What a StoreServer serves and how it loads it.
struct StoreServerOptions {
  /// The tensor-parallel size the ranks belong to.
  int tensor_parallel_size = 1;
  /// The ranks to load and serve, each in [0, tensor_parallel_size); empty: all of them.
  std::vector<int> ranks;
  /// Serve q/k/v and gate/up fused (plan_rank_layout()).
  bool fuse = true;
  /// The KV cache each rank gets; none unless a size is given.
  KvCacheOptions kv_cache;
  /// How the source is read: chunk size, concurrency, memory limit (the bytes in flight; the
  /// ranks' regions come on top of it), store options. tensor_parallel_size, rank and placement
  /// are set by the server.
  StreamerOptions stream;
  /// Where and for whom the socket listens.
  SocketServerOptions socket;
};

/// A rank that has finished loading, as StoreServer::load() reports it.
struct RankReady {
  int rank = 0;
  std::size_t tensors = 0;            ///< Weight tensors served (fused ones count once).
  std::uint64_t weight_bytes = 0;     ///< Bytes of weights loaded.
  std::uint64_t kv_cache_bytes = 0;   ///< Size of the KV cache region (0 without one).
  std::chrono::duration<double> seconds{};  ///< From the start of load() until it was ready.
};

/// Serves the ranks of one checkpoint: attach requests for a rank get its manifest and its
/// regions' descriptors (a sealed read-only weights region, a writable KV cache region), waiting
/// while it loads; status requests get the load progress.
///
/// Where the bytes come from: a model prefix holding TRAW partitions (`tensorstream partition`)
/// or rank files (`tensorstream shard`) is read rank by rank, each tensor landing straight at its
/// place in the rank's region, fused tensors included; any other checkpoint is read once and cut
/// for every rank with the partition rules of `shard`, which needs its config.json.
///
/// Everything runs on a strand of the executor given. The memory handed to workers stays valid in
/// them after the server is stopped or destroyed.
class TENSORSTREAM_API StoreServer {
 public:
  /// Checks the options and starts listening on options.socket.path; nothing is loaded until
  /// load(). Attach requests that arrive first wait for their rank.
  /// @throws InvalidArgument for a tensor-parallel size below 1, a rank outside it or given
  ///   twice, and what SocketServer's constructor throws.
  StoreServer(boost::asio::any_io_executor executor, std::string source,
              StoreServerOptions options);

  /// Stops listening (as SocketServer's destructor does) and cancels a load() in progress,
  /// without waiting for either.
  ~StoreServer();

  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  /// Loads every served rank, calling `on_ready` as each becomes ready and `on_progress` with the
  /// weight bytes landed and to land over all ranks as they land (both on the server's strand).
  /// Call it once.
  /// @throws what loading threw (the one-line error of a stream: a missing object, a bad TRAW
  ///   header, a tensor that cannot be split); every rank not yet ready then answers attach
  ///   requests with that error. Cancelling the awaiting coroutine, or stop(), ends it with
  ///   Cancelled.
  boost::asio::awaitable<void> load(
      std::function<void(const RankReady&)> on_ready = {},
      std::function<void(std::uint64_t loaded, std::uint64_t total)> on_progress = {});

  /// The reply to a status request, e.g. `{"source":"s3://b/m/","tp":2,"pid":P,
  /// "uptime_seconds":S,"ranks":[{"rank":0,"state":"ready","bytes":N,"bytes_loaded":N,
  /// "attaches":3,"waiting":0},…]}`: the server's process and whole seconds since it started;
  /// state is queued,
  /// loading, ready or failed (with an "error" member), attaches counts the attach replies sent
  /// and waiting the attach requests waiting for the rank.
  boost::asio::awaitable<std::string> status() const;

  /// Stops loading, stops listening and removes the socket file. Every rank not yet ready fails
  /// with StateError ("the server stopped while rank R was loading", or "before rank R was
  /// loaded"), which attaches waiting for it get as their reply (up to a second is given for
  /// them to go out); then closes every connection, waiting for them (SocketServer::stop()).
  boost::asio::awaitable<void> stop();

  /// The socket's path.
  const std::filesystem::path& socket_path() const noexcept;

 private:
  std::shared_ptr<detail::StoreServerState> state_;
  std::unique_ptr<SocketServer> socket_;
};

}  // namespace tensorstream::store
