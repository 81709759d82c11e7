#include "tensorstream/bench/sweep.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_future.hpp>
#include <exception>
#include <memory>
#include <numeric>
#include <random>
#include <set>
#include <utility>

#include "base/huge_page_memory.hpp"
#include "base/process_cpu.hpp"
#include "streaming/discovery.hpp"
#include "streaming/options_check.hpp"
#include "streaming/run_concurrently.hpp"
#include "tensorstream/async/library_thread.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

bool any_failed(const std::vector<SweepRun>& runs) {
  return !runs.empty() && !runs.back().error.empty();
}

const std::string& failure(const std::vector<SweepRun>& runs) {
  static const std::string none;
  return any_failed(runs) ? runs.back().error : none;
}

double median_rate(const std::vector<SweepRun>& runs) {
  if (any_failed(runs)) return 0;
  std::vector<double> rates;
  for (const auto& run : runs) rates.push_back(run.gigabytes_per_second);
  return median(std::move(rates));
}

double cpu_per_gigabyte(const std::vector<SweepRun>& runs) {
  double cpu = 0;
  double gigabytes = 0;
  for (const auto& run : runs) {
    if (!run.error.empty()) continue;
    cpu += run.cpu_seconds;
    gigabytes += static_cast<double>(run.bytes) / 1e9;
  }
  return gigabytes > 0 ? cpu / gigabytes : 0;
}

// A byte range of an object, read as a ceiling read.
struct Range {
  std::string key;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// The selected tensors' bytes of every file, runs of adjacent tensors joined, split into ranges
// of at most `range_size` bytes.
std::vector<Range> plan_ranges(const std::vector<detail::SourceFile>& files,
                               std::uint64_t range_size) {
  std::vector<Range> ranges;
  for (const auto& file : files) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    for (const auto& tensor : file.header.tensors) {
      if (tensor.byte_size() == 0) continue;
      if (!spans.empty() && spans.back().second == tensor.begin) {
        spans.back().second = tensor.end;
      } else {
        spans.emplace_back(tensor.begin, tensor.end);
      }
    }
    for (const auto& [begin, end] : spans) {
      for (std::uint64_t at = begin; at < end; at += range_size) {
        ranges.push_back({file.key, file.header.data_start + at, std::min(range_size, end - at)});
      }
    }
  }
  return ranges;
}

// What the sweep reads, found once before any run.
struct Selection {
  std::vector<detail::SourceFile> files;
  std::uint64_t model_tensors = 0;
  std::uint64_t model_bytes = 0;
  std::string io_mode;
};

Selection discover_selection(const std::string& url_text, const StreamerOptions& options,
                             std::optional<std::uint64_t> max_bytes) {
  detail::Discovery discovery = detail::discover_blocking(resolve_url(url_text), options);
  Selection selection;
  selection.files = std::move(discovery.files);
  selection.io_mode = std::move(discovery.io_mode);
  std::uint64_t taken = 0;
  bool any_taken = false;
  bool full = false;
  for (auto& file : selection.files) {
    for (const auto& tensor : file.header.tensors) {
      ++selection.model_tensors;
      selection.model_bytes += tensor.byte_size();
    }
    if (!max_bytes) continue;
    // A prefix of the stream order: the first tensor always, then while the total fits.
    std::erase_if(file.header.tensors, [&](const TensorInfo& tensor) {
      if (full || (any_taken && taken + tensor.byte_size() > *max_bytes)) {
        full = true;
        return true;
      }
      any_taken = true;
      taken += tensor.byte_size();
      return false;
    });
  }
  std::erase_if(selection.files,
                [](const detail::SourceFile& file) { return file.header.tensors.empty(); });
  return selection;
}

SweepRun stream_run(const std::string& url, StreamerOptions options) {
  SweepRun run;
  const double cpu_before = process_cpu_seconds();
  try {
    RawStreamer streamer(url, std::move(options));
    while (streamer.next_blocking()) {
    }
    const StreamStats stats = streamer.stats();
    run.seconds = stats.elapsed_seconds;
    run.gigabytes_per_second = stats.gigabytes_per_second();
    run.first_tensor_seconds = std::max(0.0, stats.first_tensor_seconds);
    run.bytes = stats.bytes;
    run.requests = stats.requests;
    run.retries = stats.retries;
    run.connections = stats.connections;
    run.peak_memory = stats.peak_memory;
  } catch (const std::exception& error) {
    run.error = error.what();
  }
  run.cpu_seconds = process_cpu_seconds() - cpu_before;
  return run;
}

// `concurrency` workers on one strand, as a stream's fetches are, each reading the next range
// into its own buffer.
SweepRun ceiling_run(const Url& url, const std::vector<Range>& ranges, std::size_t concurrency,
                     std::uint64_t range_size, const StreamerOptions& options) {
  SweepRun run;
  const std::size_t workers = std::min(concurrency, ranges.size());
  // Memory like a stream's (huge pages where the kernel gives them), written before the clock
  // starts: the first write to fresh memory can cost more than the network, and a stream reuses
  // its memory rather than paying that for every chunk.
  std::vector<detail::HugePageMemory> buffers;
  for (std::size_t i = 0; i < workers; ++i) {
    std::memset(buffers.emplace_back(range_size).data(), 0, range_size);
  }
  const double cpu_before = process_cpu_seconds();
  const auto start = Clock::now();
  try {
    asio::io_context io;
    auto strand = asio::make_strand(io);
    auto work = asio::make_work_guard(io);
    auto store = open_store(url, io.get_executor(), options.store);
    std::size_t next = 0;
    double first = -1;
    auto read_all = [&](std::size_t worker) -> asio::awaitable<void> {
      while (next < ranges.size()) {
        const Range& range = ranges[next++];
        std::string key = range.key;
        const std::span<std::byte> destination(buffers[worker].data(), range.length);
        co_await store->read_range(std::move(key), range.offset, destination);
        run.bytes += range.length;
        if (first < 0) first = seconds_since(start);
      }
    };
    auto done = asio::co_spawn(strand, detail::run_concurrently(workers, read_all),
                               asio::use_future);
    std::vector<async::LibraryThread> threads;
    for (std::size_t i = 0; i < options.io_threads; ++i) {
      threads.emplace_back("ts-bench-io", [&] { io.run(); });
    }
    const auto join = [&] {
      work.reset();
      io.stop();
      for (auto& thread : threads) thread.join();
    };
    try {
      done.get();
    } catch (...) {
      join();
      throw;
    }
    run.seconds = seconds_since(start);
    join();
    const StoreStats stats = store->stats();
    run.gigabytes_per_second = run.seconds > 0 ? static_cast<double>(run.bytes) / run.seconds / 1e9 : 0;
    run.first_tensor_seconds = std::max(0.0, first);
    run.requests = stats.requests;
    run.retries = stats.retries;
    run.connections = stats.connections;
    run.peak_memory = workers * range_size;
  } catch (const std::exception& error) {
    run.error = error.what();
  }
  run.cpu_seconds = process_cpu_seconds() - cpu_before;
  return run;
}

void validate(const SweepGrid& grid, const SweepOptions& options) {
  if (grid.chunk_sizes.empty()) throw InvalidArgument("the list of chunk sizes is empty");
  if (grid.concurrencies.empty()) throw InvalidArgument("the list of concurrencies is empty");
  for (const auto size : grid.chunk_sizes) {
    if (size == 0) throw InvalidArgument("a chunk size of 0 bytes reads nothing");
  }
  for (const auto concurrency : grid.concurrencies) {
    if (concurrency == 0) throw InvalidArgument("a concurrency of 0 reads nothing");
  }
  if (options.repeat == 0) throw InvalidArgument("repeat must be at least 1");
  if (options.max_bytes && *options.max_bytes == 0) {
    throw InvalidArgument("max_bytes must be at least 1 byte");
  }
  // What every stream would refuse, refused once before the first run.
  detail::check_streamer_options(options.stream);
}

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

}  // namespace

bool SweepCell::failed() const { return any_failed(runs); }
const std::string& SweepCell::error() const { return failure(runs); }
double SweepCell::median_gigabytes_per_second() const { return median_rate(runs); }

double SweepCell::min_gigabytes_per_second() const {
  if (failed() || runs.empty()) return 0;
  return std::min_element(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
           return a.gigabytes_per_second < b.gigabytes_per_second;
         })->gigabytes_per_second;
}

double SweepCell::max_gigabytes_per_second() const {
  if (failed() || runs.empty()) return 0;
  return std::max_element(runs.begin(), runs.end(), [](const auto& a, const auto& b) {
           return a.gigabytes_per_second < b.gigabytes_per_second;
         })->gigabytes_per_second;
}

double SweepCell::median_first_tensor_seconds() const {
  if (failed()) return 0;
  std::vector<double> values;
  for (const auto& run : runs) values.push_back(run.first_tensor_seconds);
  return median(std::move(values));
}

double SweepCell::cpu_seconds_per_gigabyte() const { return cpu_per_gigabyte(runs); }

std::uint64_t SweepCell::requests() const {
  if (failed() || runs.empty()) return 0;
  std::vector<std::uint64_t> values;
  for (const auto& run : runs) values.push_back(run.requests);
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::uint64_t SweepCell::retries() const {
  std::uint64_t total = 0;
  for (const auto& run : runs) total += run.retries;
  return total;
}

std::uint64_t SweepCell::peak_memory() const {
  std::uint64_t most = 0;
  for (const auto& run : runs) most = std::max(most, run.peak_memory);
  return most;
}

bool SweepCeiling::failed() const { return any_failed(runs); }
const std::string& SweepCeiling::error() const { return failure(runs); }
double SweepCeiling::median_gigabytes_per_second() const { return median_rate(runs); }
double SweepCeiling::cpu_seconds_per_gigabyte() const { return cpu_per_gigabyte(runs); }

const SweepCell* SweepResult::best() const {
  const SweepCell* best = nullptr;
  for (const auto& cell : cells) {
    if (cell.failed() || cell.runs.empty()) continue;
    if (!best || cell.median_gigabytes_per_second() > best->median_gigabytes_per_second()) {
      best = &cell;
    }
  }
  return best;
}

const SweepCeiling* SweepResult::ceiling_at(std::size_t concurrency) const {
  for (const auto& ceiling : ceilings) {
    if (ceiling.concurrency == concurrency) return &ceiling;
  }
  return nullptr;
}

std::string SweepResult::best_environment() const {
  const SweepCell* cell = best();
  if (!cell) return "";
  return "TENSORSTREAM_CHUNK_SIZE=" + std::to_string(cell->chunk_size) +
         " TENSORSTREAM_MAX_CONCURRENCY=" + std::to_string(cell->concurrency);
}

SweepResult sweep(const std::string& url, const SweepGrid& grid, const SweepOptions& options) {
  validate(grid, options);
  StreamerOptions stream = environment_streamer_options(options.stream);

  SweepResult result;
  result.url = url;
  result.host = host_name();
  result.started = std::chrono::system_clock::now();
  result.repeat = options.repeat;
  result.seed = options.seed ? *options.seed : std::random_device{}();
  result.chunk_sizes = grid.chunk_sizes;
  result.concurrencies = grid.concurrencies;

  Selection selection = discover_selection(url, stream, options.max_bytes);
  result.files = selection.files.size();
  result.model_tensors = selection.model_tensors;
  result.model_bytes = selection.model_bytes;
  result.io_mode = selection.io_mode;
  std::set<std::pair<std::string, std::string>> chosen;
  for (const auto& file : selection.files) {
    for (const auto& tensor : file.header.tensors) {
      ++result.tensors;
      result.bytes += tensor.byte_size();
      chosen.emplace(file.url, tensor.name);
    }
  }
  // Every run reads what discovery chose, whatever the caller's selection said already.
  stream.select = [chosen = std::move(chosen)](const TensorInfo& tensor, const std::string& object) {
    return chosen.contains({object, tensor.name});
  };

  for (const auto chunk_size : grid.chunk_sizes) {
    for (const auto concurrency : grid.concurrencies) {
      result.cells.push_back({chunk_size, concurrency, {}});
    }
  }
  const std::uint64_t largest_chunk =
      *std::max_element(grid.chunk_sizes.begin(), grid.chunk_sizes.end());
  std::vector<std::vector<Range>> ceiling_ranges;
  if (options.ceiling) {
    for (const auto concurrency : grid.concurrencies) {
      constexpr std::uint64_t mebibyte = 1ull << 20;
      const std::uint64_t even_share = (result.bytes + concurrency - 1) / concurrency;
      const std::uint64_t share_mib = (even_share + mebibyte - 1) / mebibyte * mebibyte;
      const std::uint64_t memory_mib = stream.memory_limit / concurrency / mebibyte * mebibyte;
      const std::uint64_t range_size =
          std::max(mebibyte, std::min({largest_chunk, share_mib, memory_mib}));
      result.ceilings.push_back({concurrency, range_size, {}});
      ceiling_ranges.push_back(plan_ranges(selection.files, range_size));
    }
  }

  // Items 0 … cells-1 are cells, the rest ceilings.
  std::vector<std::size_t> order(result.cells.size() + result.ceilings.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 shuffle(result.seed);
  const Url parsed = resolve_url(url);
  std::size_t& planned = result.runs_planned;
  planned = order.size() * options.repeat;
  if (options.on_plan) {
    options.on_plan(SweepPlan{.cells = result.cells.size(),
                              .ceilings = result.ceilings.size(),
                              .runs = planned,
                              .tensors = result.tensors,
                              .bytes = result.bytes});
  }
  std::size_t& done = result.runs_finished;
  for (std::size_t repeat = 0; repeat < options.repeat; ++repeat) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (const std::size_t item : order) {
      const bool is_cell = item < result.cells.size();
      std::vector<SweepRun>& runs = is_cell ? result.cells[item].runs
                                            : result.ceilings[item - result.cells.size()].runs;
      if (any_failed(runs)) continue;
      if (options.stop_requested && options.stop_requested()) {
        result.interrupted = true;
        return result;
      }
      SweepRun run;
      std::uint64_t chunk_size = 0;
      std::size_t concurrency = 0;
      if (is_cell) {
        const SweepCell& cell = result.cells[item];
        chunk_size = cell.chunk_size;
        concurrency = cell.concurrency;
        StreamerOptions cell_options = stream;
        cell_options.chunk_size = chunk_size;
        cell_options.max_concurrency = concurrency;
        run = stream_run(url, std::move(cell_options));
      } else {
        const std::size_t index = item - result.cells.size();
        const SweepCeiling& ceiling = result.ceilings[index];
        concurrency = ceiling.concurrency;
        run = ceiling_run(parsed, ceiling_ranges[index], concurrency, ceiling.range_size, stream);
      }
      run.repeat = repeat;
      if (!run.error.empty()) planned -= options.repeat - repeat - 1;
      runs.push_back(std::move(run));
      ++done;
      if (options.on_run) {
        options.on_run(SweepStep{done, planned, chunk_size, concurrency, runs.back()});
      }
    }
  }
  return result;
}

}  // namespace tensorstream::bench
