#include "tensorstream/store/store_server.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <set>

#include "async/run_on_strand.hpp"
#include "exception_message.hpp"
#include "json_string.hpp"
#include "store/rank_loader.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace detail {

namespace asio = boost::asio;

/// What the server's connections and its load share; touched only on `strand`.
struct StoreServerState {
  StoreServerState(asio::any_io_executor executor, std::string source_url,
                   StoreServerOptions server_options)
      : strand(asio::make_strand(std::move(executor))), source(std::move(source_url)),
        options(std::move(server_options)) {}

  ServedRank* find(std::uint32_t rank) {
    const auto served = std::find_if(ranks.begin(), ranks.end(), [rank](const ServedRank& r) {
      return static_cast<std::uint32_t>(r.rank) == rank;
    });
    return served == ranks.end() ? nullptr : &*served;
  }

  // "ranks 0, 1 of TP 2", for messages.
  std::string served_ranks() const {
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(ranks[i].rank);
    }
    return text + " of TP " + std::to_string(options.tensor_parallel_size);
  }

  asio::strand<asio::any_io_executor> strand;
  std::string source;
  StoreServerOptions options;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  std::vector<ServedRank> ranks;
  async::ConditionVariable changed;
  asio::cancellation_signal load_cancellation;
  bool load_started = false;
  bool loading = false;
  bool stopped = false;
};

}  // namespace detail

namespace {

namespace asio = boost::asio;
using detail::RankState;
using detail::ServedRank;
using ServerState = detail::StoreServerState;

bool settled(const ServedRank& rank) {
  return rank.state == RankState::ready || rank.state == RankState::failed;
}

std::string_view state_name(RankState state) {
  switch (state) {
    case RankState::queued: return "queued";
    case RankState::loading: return "loading";
    case RankState::ready: return "ready";
    case RankState::failed: return "failed";
  }
  return "unknown";
}

std::vector<ServedRank> served_ranks(const StoreServerOptions& options) {
  const int size = options.tensor_parallel_size;
  if (size < 1) {
    throw InvalidArgument("tensor-parallel size " + std::to_string(size) + " is below 1");
  }
  std::vector<int> numbers = options.ranks;
  if (numbers.empty()) {
    for (int rank = 0; rank < size; ++rank) numbers.push_back(rank);
  }
  std::set<int> seen;
  std::vector<ServedRank> ranks;
  for (const int rank : numbers) {
    if (rank < 0 || rank >= size) {
      throw InvalidArgument("rank " + std::to_string(rank) + " is outside TP " +
                            std::to_string(size) + " (ranks 0 to " + std::to_string(size - 1) +
                            ")");
    }
    if (!seen.insert(rank).second) {
      throw InvalidArgument("rank " + std::to_string(rank) + " is given twice");
    }
    ranks.push_back({});
    ranks.back().rank = rank;
  }
  return ranks;
}

asio::awaitable<Reply> attach(std::shared_ptr<ServerState> state, Request request) {
  ServedRank* rank = state->find(request.rank);
  if (rank == nullptr) {
    throw InvalidArgument("rank " + std::to_string(request.rank) + " is not served (this server "
                          "serves " + state->served_ranks() + ")");
  }
  if (!settled(*rank)) {
    // The timer's handler may run after this frame is gone (a client that hangs up).
    auto expired = std::make_shared<bool>(false);
    asio::steady_timer timer(state->strand, request.timeout);
    timer.async_wait([state, expired](boost::system::error_code ec) {
      if (ec) return;
      *expired = true;
      state->changed.notify_all();
    });
    struct Waiting {
      std::size_t& count;
      ~Waiting() { --count; }
    } waiting{++rank->waiting};
    co_await state->changed.wait([&] { return *expired || settled(*rank); });
    if (!settled(*rank)) {
      throw DeadlineExceeded(
          "rank " + std::to_string(rank->rank) + " is not loaded after " +
          std::to_string(request.timeout.count()) + " ms (" +
          (rank->state == RankState::queued
               ? std::string("not started yet")
               : std::to_string(rank->bytes_loaded) + " of " + std::to_string(rank->bytes) +
                     " bytes loaded") +
          ")");
    }
  }
  if (rank->state == RankState::failed) std::rethrow_exception(rank->error);
  ++rank->attaches;
  Reply reply;
  reply.json = rank->manifest_json;
  reply.fds.push_back(rank->weights->fd());
  if (rank->kv_cache) reply.fds.push_back(rank->kv_cache->fd());
  co_return reply;
}

std::string status_json(const ServerState& state) {
  std::string json = "{\"source\":";
  append_json_string(json, state.source);
  const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - state.started);
  json += ",\"tp\":" + std::to_string(state.options.tensor_parallel_size) +
          ",\"pid\":" + std::to_string(::getpid()) +
          ",\"uptime_seconds\":" + std::to_string(uptime.count()) + ",\"ranks\":[";
  for (std::size_t i = 0; i < state.ranks.size(); ++i) {
    const ServedRank& rank = state.ranks[i];
    if (i != 0) json += ',';
    json += "{\"rank\":" + std::to_string(rank.rank) + ",\"state\":\"" +
            std::string(state_name(rank.state)) + "\",\"bytes\":" + std::to_string(rank.bytes) +
            ",\"bytes_loaded\":" + std::to_string(rank.bytes_loaded) +
            ",\"attaches\":" + std::to_string(rank.attaches) +
            ",\"waiting\":" + std::to_string(rank.waiting);
    if (rank.state == RankState::failed) {
      json += ",\"error\":";
      append_json_string(json, tensorstream::detail::exception_message(rank.error));
    }
    json += '}';
  }
  return json + "]}";
}

asio::awaitable<Reply> handle(std::shared_ptr<ServerState> state, Request request) {
  if (request.op == Operation::attach) co_return co_await attach(std::move(state), request);
  Reply reply;
  reply.json = status_json(*state);
  co_return reply;
}

// Runs on the strand: the loader's progress is the state the connections read.
asio::awaitable<void> load_on_strand(
    std::shared_ptr<ServerState> state, std::function<void(const RankReady&)> on_ready,
    std::function<void(std::uint64_t, std::uint64_t)> on_progress) {
  if (state->load_started) throw StateError("StoreServer::load() was already called");
  if (state->stopped) throw Cancelled("the store server was stopped before loading");
  state->load_started = true;
  state->loading = true;
  const auto started = std::chrono::steady_clock::now();
  detail::LoadOptions load;
  load.tensor_parallel_size = state->options.tensor_parallel_size;
  load.fuse = state->options.fuse;
  load.kv_cache = state->options.kv_cache;
  load.stream = state->options.stream;
  auto changed = [state, started, &on_ready, &on_progress](ServedRank& rank) {
    state->changed.notify_all();
    if (on_progress) {
      std::uint64_t loaded = 0;
      std::uint64_t total = 0;
      for (const auto& served : state->ranks) {
        loaded += served.bytes_loaded;
        total += served.bytes;
      }
      on_progress(loaded, total);
    }
    if (rank.state != RankState::ready || !on_ready) return;
    RankReady ready;
    ready.rank = rank.rank;
    ready.tensors = static_cast<std::size_t>(std::count_if(
        rank.layout->manifest.tensors.begin(), rank.layout->manifest.tensors.end(),
        [](const TensorEntry& tensor) { return tensor.region == "weights"; }));
    ready.weight_bytes = rank.bytes;
    ready.kv_cache_bytes = rank.kv_cache ? rank.kv_cache->size() : 0;
    ready.seconds = rank.finished - started;
    on_ready(ready);
  };
  // The caller's cancellation, relayed to this strand by run_on_strand(), ends the load.
  auto slot = (co_await asio::this_coro::cancellation_state).slot();
  if (slot.is_connected()) {
    slot.assign([state](asio::cancellation_type type) { state->load_cancellation.emit(type); });
  }
  struct Detach {
    asio::cancellation_slot slot;
    ~Detach() {
      if (slot.is_connected()) slot.clear();
    }
  } detach{slot};
  try {
    co_await asio::co_spawn(
        state->strand, detail::load_ranks(state->source, load, state->ranks, changed),
        asio::bind_cancellation_slot(state->load_cancellation.slot(), asio::use_awaitable));
  } catch (const boost::system::system_error& error) {
    state->loading = false;
    if (error.code() != asio::error::operation_aborted) throw;
    throw Cancelled("loading " + state->source + " was stopped");
  } catch (...) {
    state->loading = false;
    throw;
  }
  state->loading = false;
}

// On the strand: a load not yet started never starts, one under way is cancelled, and every
// rank not ready fails with the reason, which the attaches waiting for it are told.
void stop_loading(ServerState& state) {
  state.stopped = true;
  if (state.loading) state.load_cancellation.emit(asio::cancellation_type::terminal);
  for (ServedRank& rank : state.ranks) {
    if (settled(rank)) continue;
    const std::string when = rank.state == RankState::loading ? " while rank " : " before rank ";
    rank.error = std::make_exception_ptr(StateError(
        "the server stopped" + when + std::to_string(rank.rank) +
        (rank.state == RankState::loading ? " was loading" : " was loaded")));
    rank.state = RankState::failed;
    rank.finished = std::chrono::steady_clock::now();
  }
  state.changed.notify_all();
}

// How long a stopping server lets the replies to waiting attaches go out.
constexpr std::chrono::seconds stop_grace{1};

}  // namespace

StoreServer::StoreServer(asio::any_io_executor executor, std::string source,
                         StoreServerOptions options)
    : state_(std::make_shared<ServerState>(std::move(executor), std::move(source),
                                           std::move(options))) {
  state_->ranks = served_ranks(state_->options);
  socket_ = std::make_unique<SocketServer>(
      state_->strand, state_->options.socket,
      [state = state_](Request request) { return handle(state, request); });
}

StoreServer::~StoreServer() {
  asio::post(state_->strand, [state = state_] { stop_loading(*state); });
}

asio::awaitable<void> StoreServer::load(
    std::function<void(const RankReady&)> on_ready,
    std::function<void(std::uint64_t loaded, std::uint64_t total)> on_progress) {
  co_await async::run_on_strand(
      state_->strand, load_on_strand(state_, std::move(on_ready), std::move(on_progress)));
}

asio::awaitable<std::string> StoreServer::status() const {
  auto state = state_;
  co_return co_await async::run_on_strand(
      state->strand, [](std::shared_ptr<ServerState> s) -> asio::awaitable<std::string> {
        co_return status_json(*s);
      }(state));
}

asio::awaitable<void> StoreServer::stop() {
  co_await async::run_on_strand(
      state_->strand, [](std::shared_ptr<ServerState> state) -> asio::awaitable<void> {
        stop_loading(*state);
        co_return;
      }(state_));
  co_await socket_->stop(stop_grace);
}

const std::filesystem::path& StoreServer::socket_path() const noexcept { return socket_->path(); }

}  // namespace tensorstream::store
