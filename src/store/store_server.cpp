#include "tensorstream/store/store_server.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <set>

#include "async/run_on_strand.hpp"
#include "base/exception_message.hpp"
#include "base/json_string.hpp"
#include "store/rank_loader.hpp"
#include "streaming/wait_watch.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::store {
namespace detail {

namespace asio = boost::asio;

/// One load of the served ranks: generation 1 by load(), one more by each reload.
struct Generation {
  Generation(std::uint64_t generation, std::string url)
      : number(generation), source(std::move(url)), shown_source(redact_query(source)) {}

  std::uint64_t number;
  /// What it loads, a signed URL's query included: the signature is what lets it read.
  std::string source;
  /// `source` as replies, events and messages show it: a presigned URL's signature would reach
  /// every uid the socket admits, and the logs.
  std::string shown_source;
  std::vector<ServedRank> ranks;

  ServedRank* find(std::uint32_t rank) {
    const auto served = std::find_if(ranks.begin(), ranks.end(), [rank](const ServedRank& r) {
      return static_cast<std::uint32_t>(r.rank) == rank;
    });
    return served == ranks.end() ? nullptr : &*served;
  }
};

/// A generation no longer served, for as long as workers hold its regions.
struct RetiredGeneration {
  std::uint64_t number = 0;
  std::string shown_source;
  /// Each rank that workers attached, with their processes.
  std::vector<std::pair<int, std::shared_ptr<RegionHolders>>> ranks;
};

/// A reload, under way or ended.
struct ReloadRun {
  /// The generation it loads; dropped when it fails, so that its memory goes.
  std::shared_ptr<Generation> generation;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  bool done = false;
  ReloadOutcome outcome;
};

/// What the server's connections, its load and its reloads share; touched only on `strand`.
struct StoreServerState {
  StoreServerState(asio::any_io_executor executor, std::string source_url,
                   StoreServerOptions server_options)
      : strand(asio::make_strand(std::move(executor))),
        options(std::move(server_options)),
        current(std::make_shared<Generation>(1, std::move(source_url))) {}

  // "ranks 0, 1 of TP 2", for messages.
  std::string served_ranks() const {
    const auto& ranks = current->ranks;
    std::string text = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      text += (i == 0 ? "" : ", ") + std::to_string(ranks[i].rank);
    }
    return text + " of TP " + std::to_string(options.tensor_parallel_size);
  }

  asio::strand<asio::any_io_executor> strand;
  StoreServerOptions options;
  StoreServerEvents events;
  const std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  /// What attaches get. An attach holds the generation it started with while it waits.
  std::shared_ptr<Generation> current;
  /// The latest reload: under way until done.
  std::shared_ptr<ReloadRun> reload;
  /// Generations replaced by reloads, oldest first, until no worker holds them (status()).
  std::vector<RetiredGeneration> retired;
  async::ConditionVariable changed;
  asio::cancellation_signal load_cancellation;
  asio::cancellation_signal reload_cancellation;
  bool load_started = false;
  bool loading = false;
  bool stopped = false;
};

}  // namespace detail

namespace {

namespace asio = boost::asio;
using detail::Generation;
using detail::RankState;
using detail::ReloadRun;
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
  // Held while waiting: a reload may switch `current` meanwhile.
  const std::shared_ptr<Generation> generation = state->current;
  ServedRank* rank = generation->find(request.rank);
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
  if (!rank->holders) {
    rank->holders = std::make_shared<detail::RegionHolders>(rank->weights->fd());
  }
  rank->holders->add(request.peer.pid);
  Reply reply;
  reply.json = rank->manifest_json;
  reply.fds.push_back(rank->weights->fd());
  if (rank->kv_cache) reply.fds.push_back(rank->kv_cache->fd());
  co_return reply;
}

std::uint64_t total_bytes(const Generation& generation) {
  std::uint64_t total = 0;
  for (const auto& rank : generation.ranks) total += rank.bytes;
  return total;
}

std::uint64_t loaded_bytes(const Generation& generation) {
  std::uint64_t loaded = 0;
  for (const auto& rank : generation.ranks) loaded += rank.bytes_loaded;
  return loaded;
}

// `"held":[{"generation":1,"source":"…","ranks":[{"rank":0,"attached":2}]}]`: the generations
// replaced by reloads that workers still hold; forgets those none holds any more.
std::string held_json(std::vector<detail::RetiredGeneration>& retired) {
  std::string json;
  std::erase_if(retired, [&json](detail::RetiredGeneration& generation) {
    std::string ranks;
    for (auto& [rank, holders] : generation.ranks) {
      const std::size_t attached = holders->count_live();
      if (attached == 0) continue;
      ranks += std::string(ranks.empty() ? "" : ",") + "{\"rank\":" + std::to_string(rank) +
               ",\"attached\":" + std::to_string(attached) + "}";
    }
    if (ranks.empty()) return true;
    json += std::string(json.empty() ? "" : ",") +
            "{\"generation\":" + std::to_string(generation.number) + ",\"source\":";
    append_json_string(json, generation.shown_source);
    json += ",\"ranks\":[" + ranks + "]}";
    return false;
  });
  return json.empty() ? json : ",\"held\":[" + json + "]";
}

std::string status_json(ServerState& state) {
  const Generation& current = *state.current;
  std::string json = "{\"source\":";
  append_json_string(json, current.shown_source);
  const auto uptime = std::chrono::duration_cast<std::chrono::seconds>(
      std::chrono::steady_clock::now() - state.started);
  json += ",\"tp\":" + std::to_string(state.options.tensor_parallel_size) +
          ",\"generation\":" + std::to_string(current.number) +
          ",\"pid\":" + std::to_string(::getpid()) +
          ",\"uptime_seconds\":" + std::to_string(uptime.count()) + ",\"ranks\":[";
  for (std::size_t i = 0; i < current.ranks.size(); ++i) {
    const ServedRank& rank = current.ranks[i];
    if (i != 0) json += ',';
    json += "{\"rank\":" + std::to_string(rank.rank) + ",\"state\":\"" +
            std::string(state_name(rank.state)) + "\",\"bytes\":" + std::to_string(rank.bytes) +
            ",\"bytes_loaded\":" + std::to_string(rank.bytes_loaded) +
            ",\"attaches\":" + std::to_string(rank.attaches) +
            ",\"attached\":" + std::to_string(rank.holders ? rank.holders->count_live() : 0) +
            ",\"waiting\":" + std::to_string(rank.waiting);
    if (rank.state == RankState::failed) {
      json += ",\"error\":";
      append_json_string(json, tensorstream::detail::exception_message(rank.error));
    }
    json += '}';
  }
  json += ']' + held_json(state.retired);
  const ReloadRun* reload = state.reload.get();
  if (reload != nullptr && (!reload->done || reload->outcome.error)) {
    json += ",\"reload\":{\"generation\":" + std::to_string(reload->outcome.generation) +
            ",\"source\":";
    append_json_string(json, reload->outcome.source);
    if (reload->done) {
      json += ",\"state\":\"failed\",\"error\":";
      append_json_string(json, tensorstream::detail::exception_message(reload->outcome.error));
    } else {
      json += ",\"state\":\"loading\",\"bytes\":" + std::to_string(total_bytes(*reload->generation)) +
              ",\"bytes_loaded\":" + std::to_string(loaded_bytes(*reload->generation));
    }
    json += '}';
  }
  return json + '}';
}

detail::LoadOptions load_options(const ServerState& state, std::uint64_t generation) {
  detail::LoadOptions load;
  load.tensor_parallel_size = state.options.tensor_parallel_size;
  load.fuse = state.options.fuse;
  load.kv_cache = state.options.kv_cache;
  load.generation = generation;
  load.stream = state.options.stream;
  return load;
}

// What the loader calls as a rank of `generation` changes: wakes the attaches waiting, reports
// progress over the generation, and each rank once ready (to `ready` too, where given).
detail::RankChanged rank_changed(std::shared_ptr<ServerState> state,
                                 std::shared_ptr<Generation> generation,
                                 std::chrono::steady_clock::time_point started,
                                 std::vector<RankReady>* ready = nullptr) {
  return [state, generation, started, ready](ServedRank& rank) {
    state->changed.notify_all();
    if (state->events.progress) {
      state->events.progress(loaded_bytes(*generation), total_bytes(*generation));
    }
    if (rank.state != RankState::ready) return;
    RankReady report;
    report.rank = rank.rank;
    report.generation = generation->number;
    report.tensors = static_cast<std::size_t>(std::count_if(
        rank.layout->manifest.tensors.begin(), rank.layout->manifest.tensors.end(),
        [](const TensorEntry& tensor) { return tensor.region == "weights"; }));
    report.weight_bytes = rank.bytes;
    report.kv_cache_bytes = rank.kv_cache ? rank.kv_cache->size() : 0;
    report.seconds = rank.finished - started;
    if (ready != nullptr) ready->push_back(report);
    if (state->events.rank_ready) state->events.rank_ready(report);
  };
}

// Loads `generation`'s ranks on the strand, the loader's progress being the state connections
// read; `cancellation` ends it.
asio::awaitable<void> load_generation(std::shared_ptr<ServerState> state,
                                      std::shared_ptr<Generation> generation,
                                      asio::cancellation_signal& cancellation,
                                      detail::RankChanged changed) {
  tensorstream::detail::WaitWatch waits(state->strand);
  detail::LoadOptions options = load_options(*state, generation->number);
  options.waits = &waits;
  asio::awaitable<void> load = detail::load_ranks(generation->source, std::move(options),
                                                  generation->ranks, std::move(changed));
  std::function<void(const tensorstream::detail::LongestWait&)> report =
      [state](const tensorstream::detail::LongestWait& wait) {
        if (state->events.waiting) state->events.waiting(wait.what, wait.seconds);
      };
  co_await asio::co_spawn(
      state->strand,
      tensorstream::detail::with_wait_reports(waits, std::move(load), std::move(report)),
      asio::bind_cancellation_slot(cancellation.slot(), asio::use_awaitable));
}

asio::awaitable<void> load_on_strand(std::shared_ptr<ServerState> state,
                                     StoreServerEvents events) {
  if (state->load_started) throw StateError("StoreServer::load() was already called");
  if (state->stopped) throw Cancelled("the store server was stopped before loading");
  state->load_started = true;
  state->loading = true;
  state->events = std::move(events);
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
  const std::shared_ptr<Generation> generation = state->current;
  try {
    co_await load_generation(state, generation, state->load_cancellation,
                             rank_changed(state, generation, std::chrono::steady_clock::now()));
  } catch (const boost::system::system_error& error) {
    state->loading = false;
    if (error.code() != asio::error::operation_aborted && !state->stopped) throw;
    throw Cancelled("loading " + generation->shown_source + " was stopped");
  } catch (...) {
    state->loading = false;
    // stop() ends a load however the load noticed: a cancelled read, or a rank it failed, which
    // the load may meet before the cancellation reaches it.
    if (state->stopped) throw Cancelled("loading " + generation->shown_source + " was stopped");
    throw;
  }
  state->loading = false;
}

// Keeps the served generation's record of its workers, which a reload is about to replace.
void retire(ServerState& state) {
  detail::RetiredGeneration retired{state.current->number, state.current->shown_source, {}};
  for (const ServedRank& rank : state.current->ranks) {
    if (rank.holders) retired.ranks.emplace_back(rank.rank, rank.holders);
  }
  if (!retired.ranks.empty()) state.retired.push_back(std::move(retired));
}

// Loads the reload's generation and, once every rank is ready, serves it. Runs detached from
// whoever asked: its outcome is in `run` and goes to the events.
asio::awaitable<void> run_reload(std::shared_ptr<ServerState> state,
                                 std::shared_ptr<ReloadRun> run) {
  const std::shared_ptr<Generation> generation = run->generation;
  try {
    co_await load_generation(
        state, generation, state->reload_cancellation,
        rank_changed(state, generation, run->started, &run->outcome.ranks));
    if (state->stopped) throw Cancelled("the server stopped");
    retire(*state);
    state->current = generation;
  } catch (...) {
    // stop() ends a reload however the load noticed: a cancelled read, a rank it failed.
    run->outcome.error =
        state->stopped ? std::make_exception_ptr(Cancelled("the server stopped while reloading " +
                                                           generation->shown_source))
                       : std::current_exception();
  }
  run->outcome.seconds = std::chrono::steady_clock::now() - run->started;
  run->done = true;
  // A failed generation's memory goes now; a served one's when it is replaced in turn.
  run->generation.reset();
  state->changed.notify_all();
  if (state->events.reloaded) state->events.reloaded(run->outcome);
}

// On the strand: starts a reload of `source` (empty: the one served), or says why it cannot.
std::shared_ptr<ReloadRun> start_reload(const std::shared_ptr<ServerState>& state,
                                        std::string source) {
  if (state->stopped) throw Cancelled("the server is stopping");
  if (!state->load_started || state->loading) {
    throw StateError("generation 1 is " + std::string(state->load_started ? "still loading"
                                                                          : "not loaded yet") +
                     "; reload once it is served");
  }
  if (state->options.stream.distributed.group) {
    throw StateError("servers that read a checkpoint together (--world-size) cannot reload one "
                     "by one; restart them together");
  }
  if (state->reload && !state->reload->done) {
    throw StateError("a reload of " + state->reload->outcome.source + " (generation " +
                     std::to_string(state->reload->outcome.generation) + ") is under way");
  }
  auto run = std::make_shared<ReloadRun>();
  run->generation = std::make_shared<Generation>(
      state->current->number + 1, source.empty() ? state->current->source : std::move(source));
  run->generation->ranks = served_ranks(state->options);
  run->outcome.generation = run->generation->number;
  run->outcome.source = run->generation->shown_source;
  state->reload = run;
  asio::co_spawn(state->strand, run_reload(state, run), asio::detached);
  return run;
}

// On the strand: waits for `run` to end. Cancelling the wait leaves the reload going.
asio::awaitable<ReloadOutcome> reload_outcome(std::shared_ptr<ServerState> state,
                                              std::shared_ptr<ReloadRun> run) {
  co_await state->changed.wait([&] { return run->done; });
  if (run->outcome.error) std::rethrow_exception(run->outcome.error);
  co_return run->outcome;
}

// `{"generation":2,"source":"…","seconds":S,"ranks":[{"rank":0,"tensors":T,"bytes":N,
// "kv_cache_bytes":M,"seconds":S},…]}`.
std::string reloaded_json(const ReloadOutcome& outcome) {
  std::string json = "{\"generation\":" + std::to_string(outcome.generation) + ",\"source\":";
  append_json_string(json, outcome.source);
  json += ",\"seconds\":" + std::to_string(outcome.seconds.count()) + ",\"ranks\":[";
  for (std::size_t i = 0; i < outcome.ranks.size(); ++i) {
    const RankReady& rank = outcome.ranks[i];
    if (i != 0) json += ',';
    json += "{\"rank\":" + std::to_string(rank.rank) +
            ",\"tensors\":" + std::to_string(rank.tensors) +
            ",\"bytes\":" + std::to_string(rank.weight_bytes) +
            ",\"kv_cache_bytes\":" + std::to_string(rank.kv_cache_bytes) +
            ",\"seconds\":" + std::to_string(rank.seconds.count()) + '}';
  }
  return json + "]}";
}

asio::awaitable<Reply> reload(std::shared_ptr<ServerState> state, Request request) {
  const uid_t own = ::geteuid();
  if (request.peer.uid != own && request.peer.uid != 0) {
    // A reload replaces what every worker attaches next: the operator's, not any worker's.
    throw Error("uid " + std::to_string(request.peer.uid) + " may attach but not reload (" +
                    (own == 0 ? std::string("only root may")
                              : "only uid " + std::to_string(own) + ", the server's, and root may") +
                    ")",
                ErrorKind::access_denied);
  }
  auto run = start_reload(state, std::move(request.source));
  Reply reply;
  reply.json = reloaded_json(co_await reload_outcome(state, std::move(run)));
  co_return reply;
}

asio::awaitable<Reply> handle(std::shared_ptr<ServerState> state, Request request) {
  switch (request.op) {
    case Operation::attach:
      co_return co_await attach(std::move(state), std::move(request));
    case Operation::reload:
      co_return co_await reload(std::move(state), std::move(request));
    case Operation::status:
      break;
  }
  Reply reply;
  reply.json = status_json(*state);
  co_return reply;
}

// On the strand: a load not yet started never starts, one under way is cancelled, and every
// rank not ready fails with the reason, which the attaches waiting for it are told. A reload
// under way is cancelled the same way.
void stop_loading(ServerState& state) {
  state.stopped = true;
  if (state.loading) state.load_cancellation.emit(asio::cancellation_type::terminal);
  std::vector<Generation*> generations{state.current.get()};
  if (state.reload && !state.reload->done) {
    state.reload_cancellation.emit(asio::cancellation_type::terminal);
    generations.push_back(state.reload->generation.get());
  }
  for (Generation* generation : generations) {
    for (ServedRank& rank : generation->ranks) {
      if (settled(rank)) continue;
      const std::string when = rank.state == RankState::loading ? " while rank " : " before rank ";
      rank.error = std::make_exception_ptr(StateError(
          "the server stopped" + when + std::to_string(rank.rank) +
          (rank.state == RankState::loading ? " was loading" : " was loaded")));
      rank.state = RankState::failed;
      rank.finished = std::chrono::steady_clock::now();
    }
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
  state_->current->ranks = served_ranks(state_->options);
  socket_ = std::make_unique<SocketServer>(
      state_->strand, state_->options.socket,
      [state = state_](Request request) { return handle(state, request); });
}

StoreServer::~StoreServer() {
  asio::post(state_->strand, [state = state_] { stop_loading(*state); });
}

asio::awaitable<void> StoreServer::load(StoreServerEvents events) {
  co_await async::run_on_strand(state_->strand, load_on_strand(state_, std::move(events)));
}

asio::awaitable<ReloadOutcome> StoreServer::reload(std::string source) {
  co_return co_await async::run_on_strand(
      state_->strand,
      [](std::shared_ptr<ServerState> state, std::string what) -> asio::awaitable<ReloadOutcome> {
        auto run = start_reload(state, std::move(what));
        co_return co_await reload_outcome(state, std::move(run));
      }(state_, std::move(source)));
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
