#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/byte_size.hpp"
#include "base/exception_message.hpp"
#include "cli/commands.hpp"
#include "cli/group_flags.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/progress_bar.hpp"
#include "cli/progress_flag.hpp"
#include "cli/store_flags.hpp"
#include "streaming/group_agreement.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/store_server.hpp"

namespace tensorstream::cli {
namespace {

namespace asio = boost::asio;

struct ServeArguments {
  std::string source;
  int tensor_parallel_size = 1;
  std::vector<int> ranks;
  std::string socket;
  bool no_fuse = false;
  std::optional<std::int64_t> kv_cache_blocks;
  std::string kv_cache_memory;
  std::int64_t block_size = 16;
  std::string kv_dtype;
  std::vector<uid_t> allow_uids;
  std::vector<gid_t> allow_gids;
  std::string ready_file;
  std::string progress;
  int rank = 0;
  GroupFlags group;
  SourceReadFlags read;
  StoreFlags store;
};

// A line on stdout, flushed. A reader that went away (`serve … | head -1`) is an error that stops
// the server cleanly, socket file removed, rather than a SIGPIPE that would leave it behind.
void print_line(const std::string& line) {
  if (std::puts(line.c_str()) < 0 || std::fflush(stdout) != 0) {
    throw StorageError("stdout", std::strerror(errno));
  }
}

double gigabytes_per_second(std::uint64_t bytes, double seconds) {
  return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0.0;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string rank_line(const store::RankReady& ready) {
  std::string line = "{";
  append_key(line, "rank");
  line += std::to_string(ready.rank);
  append_key(line, "generation");
  line += std::to_string(ready.generation);
  append_key(line, "tensors");
  line += std::to_string(ready.tensors);
  append_key(line, "bytes");
  line += std::to_string(ready.weight_bytes);
  append_key(line, "kv_cache_bytes");
  line += std::to_string(ready.kv_cache_bytes);
  append_key(line, "seconds");
  line += fixed(ready.seconds.count(), 3);
  return line + '}';
}

// `time` in UTC, as "2026-12-03T15:59:01Z".
std::string utc_text(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
  return text;
}

// The pid and start time tell a reader of the ready file whether the server that wrote it is
// the one running now: a killed server leaves its file behind.
std::string ready_line(const std::string& socket, std::uint64_t generation,
                       const std::vector<int>& ranks, std::uint64_t bytes, double seconds,
                       std::chrono::system_clock::time_point started) {
  std::string line = "{";
  append_key(line, "ready");
  line += '{';
  append_key(line, "socket");
  append_json_string(line, socket);
  append_key(line, "generation");
  line += std::to_string(generation);
  append_key(line, "pid");
  line += std::to_string(::getpid());
  append_key(line, "started");
  append_json_string(line, utc_text(started));
  append_key(line, "ranks");
  append_int_array(line, std::vector<std::int64_t>(ranks.begin(), ranks.end()));
  append_key(line, "bytes");
  line += std::to_string(bytes);
  append_key(line, "seconds");
  line += fixed(seconds, 3);
  append_key(line, "gb_per_s");
  line += fixed(gigabytes_per_second(bytes, seconds), 3);
  return line + "}}";
}

// Written whole under a temporary name, then renamed: a supervisor never reads half of it.
void write_ready_file(const std::filesystem::path& path, const std::string& line) {
  const auto temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << line << '\n';
    if (!out.flush()) throw StorageError(temporary, "cannot write the ready file");
  }
  std::error_code ec;
  std::filesystem::rename(temporary, path, ec);
  if (ec) throw StorageError(path.string(), "cannot write the ready file: " + ec.message());
}

store::StoreServerOptions server_options(const ServeArguments& arguments) {
  store::StoreServerOptions options;
  options.tensor_parallel_size = arguments.tensor_parallel_size;
  options.ranks = arguments.ranks;
  options.fuse = !arguments.no_fuse;
  options.kv_cache.num_blocks = arguments.kv_cache_blocks;
  if (!arguments.kv_cache_memory.empty()) {
    options.kv_cache.memory = parse_byte_size(arguments.kv_cache_memory, "--kv-cache-memory");
  }
  options.kv_cache.block_size = arguments.block_size;
  if (!arguments.kv_dtype.empty()) {
    options.kv_cache.dtype = parse_dtype(arguments.kv_dtype);
    if (!options.kv_cache.dtype) {
      throw InvalidArgument("--kv-dtype: unknown dtype '" + arguments.kv_dtype +
                            "' (e.g. BF16, F16, F32, F8_E4M3)");
    }
  }
  options.stream = apply_source_read_flags(arguments.read, arguments.store);
  options.socket.path = arguments.socket;
  options.socket.allowed_uids = arguments.allow_uids;
  options.socket.allowed_gids = arguments.allow_gids;
  return options;
}

// Bytes landed over all ranks, and what the load waits for, written by the server's thread,
// drawn by the progress bar's.
class LoadProgress {
 public:
  void set(std::uint64_t loaded, std::uint64_t total) {
    std::lock_guard lock(mutex_);
    sample_.done = loaded;
    sample_.total = total;
  }

  void set_waiting(const std::string& waiting_for, double seconds) {
    std::lock_guard lock(mutex_);
    sample_.waiting_for = waiting_for;
    sample_.waiting_seconds = seconds;
  }

  ProgressSample sample() const {
    std::lock_guard lock(mutex_);
    return sample_;
  }

 private:
  mutable std::mutex mutex_;
  ProgressSample sample_;
};

// A world of servers (one per node) loads the checkpoint once between them: they join one group,
// which every rank's stream of this server then broadcasts over, in the same order on each.
// Servers in one group serve the same ranks.
std::shared_ptr<BroadcastGroup> join_servers(const ServeArguments& arguments,
                                             const store::StoreServerOptions& options) {
  const DistributedOptions distributed = distributed_options(arguments.group, arguments.rank);
  if (!distributed.enabled()) {
    if (arguments.rank != 0) throw InvalidArgument("--rank needs --world-size above 1");
    return nullptr;
  }
  // One group of every server: serving different ranks is a disagreement, not another group.
  std::string served = " serving --tp " + std::to_string(arguments.tensor_parallel_size) +
                       " --ranks ";
  for (const int rank : arguments.ranks) served += std::to_string(rank) + ",";
  served.pop_back();
  if (arguments.ranks.empty()) served += " all";
  return join_group(distributed, "serve",
                    tensorstream::detail::member_description(
                        arguments.source, environment_streamer_options(options.stream)) +
                        served);
}

void run_serve(const ServeArguments& arguments) {
  auto options = server_options(arguments);
  options.stream.distributed.group = join_servers(arguments, options);
  std::signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  // Caught from before the socket exists, so that a SIGTERM never leaves the socket file behind.
  asio::signal_set signals(io, SIGINT, SIGTERM);
  asio::signal_set reload_signal(io, SIGHUP);
  const auto started_at = std::chrono::system_clock::now();
  store::StoreServer server(io.get_executor(), arguments.source, options);
  // This server owns the socket now: a ready file there is a dead one's, and says nothing yet.
  if (!arguments.ready_file.empty()) {
    std::error_code ignored;
    std::filesystem::remove(arguments.ready_file, ignored);
  }

  std::vector<int> ranks = arguments.ranks;
  if (ranks.empty()) {
    for (int rank = 0; rank < arguments.tensor_parallel_size; ++rank) ranks.push_back(rank);
  }
  LoadProgress shared;
  std::optional<ProgressDisplay> progress;
  if (const auto style = progress_style(arguments.progress, false)) {
    progress.emplace(*style, [&shared] { return shared.sample(); });
  }

  bool stopping = false;
  bool wrote_ready_file = false;
  std::exception_ptr failure;
  const auto shut_down = [&] {
    if (stopping) return;
    stopping = true;
    signals.cancel();
    reload_signal.cancel();
    asio::co_spawn(io, server.stop(), asio::detached);
  };
  signals.async_wait([&](boost::system::error_code ec, int) {
    if (!ec) shut_down();
  });
  // The ready line goes to stdout and, rewritten whole, to the ready file: once every rank of
  // generation 1 is ready, and again for each generation a reload serves.
  const auto announce = [&](std::uint64_t generation, std::uint64_t bytes, double seconds) {
    const std::string line =
        ready_line(arguments.socket, generation, ranks, bytes, seconds, started_at);
    try {
      print_line(line);
      if (!arguments.ready_file.empty()) {
        write_ready_file(arguments.ready_file, line);
        wrote_ready_file = true;
      }
    } catch (...) {
      failure = std::current_exception();
      shut_down();
    }
  };

  // Reloads, whether asked by SIGHUP or by a reload request, are told here. A failed one leaves
  // the generation served before, so it is a warning, not the end of the server.
  std::uint64_t reloads_told = 0;
  store::StoreServerEvents events;
  std::uint64_t bytes = 0;
  events.rank_ready = [&](const store::RankReady& ready) {
    if (ready.generation == 1) bytes += ready.weight_bytes;
    print_line(rank_line(ready));
  };
  events.progress = [&shared](std::uint64_t loaded, std::uint64_t total) {
    shared.set(loaded, total);
  };
  events.waiting = [&shared](const std::string& waiting_for, double seconds) {
    shared.set_waiting(waiting_for, seconds);
  };
  events.reloaded = [&](const store::ReloadOutcome& outcome) {
    ++reloads_told;
    if (outcome.error) {
      std::fprintf(stderr, "tensorstream: warning: reload of %s failed, still serving generation "
                           "%llu: %s\n",
                   outcome.source.c_str(),
                   static_cast<unsigned long long>(outcome.generation - 1),
                   tensorstream::detail::exception_message(outcome.error).c_str());
      return;
    }
    std::uint64_t reloaded = 0;
    for (const auto& rank : outcome.ranks) reloaded += rank.weight_bytes;
    announce(outcome.generation, reloaded, outcome.seconds.count());
  };
  // SIGHUP reloads the source served. A reload that cannot start (one under way, generation 1
  // still loading) is a warning; one that starts is told by events.reloaded.
  std::function<void()> await_reload_signal = [&] {
    reload_signal.async_wait([&](boost::system::error_code ec, int) {
      if (ec) return;
      const std::uint64_t told = reloads_told;
      asio::co_spawn(io, server.reload(),
                     [&, told](std::exception_ptr error, const store::ReloadOutcome&) {
                       if (error && reloads_told == told && !stopping) {
                         std::fprintf(stderr, "tensorstream: warning: SIGHUP: cannot reload: %s\n",
                                      tensorstream::detail::exception_message(error).c_str());
                       }
                     });
      await_reload_signal();
    });
  };
  await_reload_signal();

  const auto start = std::chrono::steady_clock::now();
  asio::co_spawn(io, server.load(std::move(events)), [&](std::exception_ptr error) {
    if (!error && progress) progress->finish();
    progress.reset();
    if (error) {
      if (!stopping) failure = error;
      shut_down();
      return;
    }
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    announce(1, bytes, elapsed.count());
  });
  io.run();
  progress.reset();
  if (wrote_ready_file) {
    std::error_code ec;
    std::filesystem::remove(arguments.ready_file, ec);
  }
  if (failure) std::rethrow_exception(failure);
}

}  // namespace

void register_serve_command(CLI::App& app) {
  auto arguments = std::make_shared<ServeArguments>();
  auto* command = app.add_subcommand(
      "serve",
      "Load a checkpoint's tensor-parallel ranks into shared memory once and hand them to "
      "worker processes over a Unix socket, until SIGTERM or SIGINT; SIGHUP reloads it");
  command
      ->add_option("src", arguments->source,
                   "A model prefix holding TRAW partitions (tensorstream partition) or rank files "
                   "(tensorstream shard), or any checkpoint, cut for each rank as it streams")
      ->required();
  command->add_option("--tp", arguments->tensor_parallel_size, "Tensor-parallel size")
      ->required()
      ->check(positive_number);
  command->add_option("--ranks", arguments->ranks, "Ranks to serve, comma-separated (default: all)")
      ->delimiter(',')
      ->check(non_negative_number);
  command->add_option("--socket", arguments->socket, "Path of the Unix socket to listen on")
      ->required();
  command->add_flag("--no-fuse", arguments->no_fuse,
                    "Serve q/k/v and gate/up as stored instead of as qkv_proj and gate_up_proj");
  command->add_option("--kv-cache-blocks", arguments->kv_cache_blocks,
                      "Blocks of paged KV cache per rank");
  command->add_option("--kv-cache-memory", arguments->kv_cache_memory,
                      "Memory of KV cache per rank (e.g. 2GiB), instead of --kv-cache-blocks");
  command->add_option("--block-size", arguments->block_size, "Tokens per KV cache block")
      ->capture_default_str();
  command->add_option("--kv-dtype", arguments->kv_dtype,
                      "dtype of the KV cache (default: that of the weights)");
  command->add_option("--allow-uid", arguments->allow_uids,
                      "Also let processes of this uid attach (repeatable)");
  command->add_option("--allow-gid", arguments->allow_gids,
                      "Also let processes whose effective gid is this attach (repeatable)");
  command->add_option("--ready-file", arguments->ready_file,
                      "Write the ready line to this file once every rank is loaded; removed on "
                      "exit");
  command->add_option("--rank", arguments->rank,
                      "With --world-size: this server's rank among the servers reading the "
                      "checkpoint together (one per node)")
      ->capture_default_str();
  add_group_flags(*command, arguments->group);
  add_progress_flag(*command, arguments->progress);
  add_source_read_flags(*command, arguments->read,
                        "Memory for tensors in flight (the ranks' shared memory comes on top)");
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_serve(*arguments); });
}

}  // namespace tensorstream::cli
