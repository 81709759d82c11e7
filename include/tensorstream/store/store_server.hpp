#pragma once
/// @file
/// The store server: loads the ranks of a checkpoint once into shared memory and hands them to
/// worker processes over a Unix socket (docs/store-server.md).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
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

/// A rank that has finished loading, as StoreServerEvents::rank_ready reports it.
struct RankReady {
  int rank = 0;
  std::uint64_t generation = 1;       ///< The load it belongs to: 1, then one more per reload.
  std::size_t tensors = 0;            ///< Weight tensors served (fused ones count once).
  std::uint64_t weight_bytes = 0;     ///< Bytes of weights loaded.
  std::uint64_t kv_cache_bytes = 0;   ///< Size of the KV cache region (0 without one).
  /// From the start of its load (load(), or the reload) until it was ready.
  std::chrono::duration<double> seconds{};
};

/// How a reload ended: what StoreServer::reload() returns once its generation is served, and
/// what StoreServerEvents::reloaded reports of every reload, served or failed.
struct ReloadOutcome {
  std::uint64_t generation = 0;  ///< The generation it loaded (one more than the one before).
  std::string source;            ///< What it loaded, its query shown as `?…` (redact_query()).
  std::vector<RankReady> ranks;  ///< Its ranks, each once ready.
  std::chrono::duration<double> seconds{};  ///< From its start until it was served or failed.
  std::exception_ptr error;      ///< Why it failed; null when it is served.
};

/// What a StoreServer tells its owner as it loads and reloads, each on the server's strand; any
/// may be empty. The server keeps them for its life (reloads come later): what they refer to
/// must outlive it.
struct StoreServerEvents {
  /// Each rank of each generation, once ready.
  std::function<void(const RankReady&)> rank_ready;
  /// The weight bytes landed and to land over all ranks of the generation loading, as they land.
  std::function<void(std::uint64_t loaded, std::uint64_t total)> progress;
  /// Each reload, once its generation is served or it failed.
  std::function<void(const ReloadOutcome&)> reloaded;
  /// While a request of a load (or reload) waits for its server, once a second: what for ("a
  /// response from HOST") and for how many seconds so far; then once with "" and 0 when no
  /// request waits any more. No bytes land meanwhile, so `progress` says nothing.
  std::function<void(const std::string& waiting_for, double seconds)> waiting;
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
/// A reload (reload(), a reload request, SIGHUP to `tensorstream serve`) loads the source again,
/// or another, as a new generation into new regions while attaches still get the one served;
/// once every rank of it is ready, attaches get the new one. Workers keep what they mapped, old
/// bytes exact, for as long as they hold it: the server only drops its own references.
///
/// Replies, events and messages show the source with its query as `?…` (redact_query()): a
/// signed URL's signature would otherwise reach every uid the socket admits, and the logs.
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

  /// Loads every served rank as generation 1, telling `events` as ranks become ready and bytes
  /// land; the server keeps `events` for later reloads. Call it once.
  /// @throws what loading threw (the one-line error of a stream: a missing object, a bad TRAW
  ///   header, a tensor that cannot be split); every rank not yet ready then answers attach
  ///   requests with that error. Cancelling the awaiting coroutine, or stop(), ends it with
  ///   Cancelled.
  boost::asio::awaitable<void> load(StoreServerEvents events = {});

  /// Loads `source` (empty: the source served now, read afresh, so that a changed object is
  /// read at its new version) as the next generation, and serves it once every rank is ready.
  /// Until then attaches get the generation served now; a reload that fails leaves it served.
  /// Both stay in memory meanwhile. The reload goes on if the awaiting coroutine is cancelled
  /// (a reload request's client that hangs up); stop() ends it.
  /// @returns the outcome, once served.
  /// @throws StateError when load() has not finished (even when it failed, a reload may
  ///   follow), another reload is under way, or the server reads together with others
  ///   (StreamerOptions::distributed), which must restart together; Cancelled after stop();
  ///   what loading the new generation threw.
  boost::asio::awaitable<ReloadOutcome> reload(std::string source = {});

  /// The reply to a status request, e.g. `{"source":"s3://b/m/","tp":2,"generation":1,"pid":P,
  /// "uptime_seconds":S,"ranks":[{"rank":0,"state":"ready","bytes":N,"bytes_loaded":N,
  /// "attaches":3,"attached":2,"waiting":0},…]}`: the generation served and its source, the
  /// server's process and whole seconds since it started; state is queued, loading, ready or
  /// failed (with an "error" member), attaches counts the attach replies sent, attached the
  /// worker processes that still map the rank, and waiting the attach requests waiting for the
  /// rank. Generations replaced by reloads that workers still map follow as `"held":
  /// [{"generation":1,"source":"…","ranks":[{"rank":0,"attached":1}]}]`. While a reload is
  /// under way, or after one failed, `"reload":
  /// {"generation":2,"source":"…","state":"loading","bytes":N,"bytes_loaded":N}` (or
  /// `"state":"failed","error":"…"`) says so.
  boost::asio::awaitable<std::string> status() const;

  /// Stops loading and reloading, stops listening and removes the socket file. Every rank not
  /// yet ready fails with StateError ("the server stopped while rank R was loading", or "before
  /// rank R was loaded"), which attaches waiting for it get as their reply (up to a second is
  /// given for them to go out); a reload under way fails with Cancelled. Then closes every
  /// connection, waiting for them (SocketServer::stop()).
  boost::asio::awaitable<void> stop();

  /// The socket's path.
  const std::filesystem::path& socket_path() const noexcept;

 private:
  std::shared_ptr<detail::StoreServerState> state_;
  std::unique_ptr<SocketServer> socket_;
};

}  // namespace tensorstream::store
