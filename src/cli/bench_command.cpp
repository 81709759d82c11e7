#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/number_checks.hpp"
#include "cli/store_flags.hpp"
#include "cli/tensor_filter_flags.hpp"
#include "storage/output_file.hpp"
#include "tensorstream/bench/sweep.hpp"
#include "tensorstream/bench/sweep_report.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/model/model_loader_config.hpp"

namespace tensorstream::cli {
namespace {

struct BenchArguments {
  std::optional<std::string> url;
  std::vector<std::string> chunk_sizes{"1MiB", "4MiB", "16MiB", "64MiB"};
  std::vector<std::string> concurrencies{"4", "8", "16", "32", "64"};
  std::size_t repeat = 3;
  std::optional<std::string> max_bytes;
  bool ceiling = false;
  bool json = false;
  std::string csv;
  std::string svg;
  std::string memory_limit = "512MiB";
  std::size_t io_threads = StreamerOptions{}.io_threads;
  int rank = 0;
  std::optional<int> tensor_parallel_size;
  std::optional<std::uint64_t> seed;
  TensorFilterFlags filter;
  StoreFlags store;
};

void check_list(const std::vector<std::string>& values, const char* option) {
  if (values.empty()) throw InvalidArgument(std::string(option) + ": the list is empty");
  for (const auto& value : values) {
    if (value.empty()) {
      throw InvalidArgument(std::string(option) + ": the list has an empty item");
    }
  }
}

std::size_t parse_concurrency(const std::string& text) {
  std::size_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size()) {
    throw InvalidArgument("--concurrency: '" + text + "' is not a number");
  }
  if (value == 0) throw InvalidArgument("--concurrency: 0 is not a positive number");
  if (value > tensorstream::detail::max_concurrency_limit) {
    throw InvalidArgument("--concurrency: " + text + " is not between 1 and " +
                          std::to_string(tensorstream::detail::max_concurrency_limit));
  }
  return value;
}

// An output file the user named must be writable before a sweep of many minutes starts.
void check_writable(const std::string& path, const char* option) {
  if (path.empty()) return;
  const std::filesystem::path directory =
      std::filesystem::absolute(path).parent_path();
  if (!std::filesystem::is_directory(directory) || ::access(directory.c_str(), W_OK) != 0) {
    throw InvalidArgument(std::string(option) + ": cannot write " + path + ": " +
                          directory.string() + " is not a writable directory");
  }
}

// Written whole under a temporary name, then renamed: a reader never sees half of it.
void write_file(const std::string& path, const std::string& text) {
  tensorstream::detail::OutputFile file(path);
  file.write_at(0, std::as_bytes(std::span(text)));
  file.commit();
}

void report_step(const bench::SweepStep& step) {
  const std::string cell =
      step.chunk_size ? format_byte_size(step.chunk_size) + " chunks" : std::string("ceiling");
  if (step.run.error.empty()) {
    std::fprintf(stderr, "[%zu/%zu] %s x %zu, run %zu: %.3f GB/s\n", step.index, step.count,
                 cell.c_str(), step.concurrency, step.run.repeat + 1,
                 step.run.gigabytes_per_second);
  } else {
    std::fprintf(stderr, "[%zu/%zu] %s x %zu, run %zu: failed: %s\n", step.index, step.count,
                 cell.c_str(), step.concurrency, step.run.repeat + 1, step.run.error.c_str());
  }
}

// Below this, a run lasts milliseconds on a fast link, and its rate says more about latency and
// start-up than about what a chunk size and concurrency sustain.
constexpr std::uint64_t smallest_meaningful_run = std::uint64_t{64} << 20;

// What the sweep will read, before it starts: a grid over a large model can take an hour.
void report_plan(const bench::SweepPlan& plan) {
  std::string ceilings;
  if (plan.ceilings > 0) ceilings = " and " + counted(plan.ceilings, "ceiling");
  std::fprintf(stderr, "tensorstream: bench: %s%s, %s of %s each: %s to read\n",
               counted(plan.cells, "cell").c_str(), ceilings.c_str(),
               counted(plan.runs, "run").c_str(), format_byte_size(plan.bytes).c_str(),
               format_byte_size(plan.bytes * plan.runs).c_str());
  if (plan.bytes < smallest_meaningful_run) {
    log(LogLevel::warning,
        "each run reads only " + format_byte_size(plan.bytes) + " (" +
            counted(plan.tensors, "tensor") +
            "): runs this short measure start-up and latency more than throughput, so the "
            "ranking is mostly noise; sweep a checkpoint of at least " +
            format_byte_size(smallest_meaningful_run) +
            " (gen-model --preset llama-7b-4layers writes 2.0 GiB)");
  }
}

// The first Ctrl-C ends the sweep after the run in flight, so that the report (and --csv and
// --svg) still shows the cells finished so far: an hour's sweep is not lost to one keystroke.
// SA_RESETHAND makes a second Ctrl-C end the process at once, as usual.
std::atomic<bool> sweep_interrupted{false};

void on_sweep_interrupt(int) {
  sweep_interrupted.store(true);
  constexpr char message[] =
      "\ntensorstream: bench: interrupted; reporting after the run in flight (Ctrl-C again to quit "
      "at once)\n";
  [[maybe_unused]] const auto written = ::write(STDERR_FILENO, message, sizeof message - 1);
}

// Installs on_sweep_interrupt for SIGINT for as long as it lives.
class InterruptHandler {
 public:
  InterruptHandler() {
    sweep_interrupted.store(false);
    struct sigaction action {};
    action.sa_handler = on_sweep_interrupt;
    action.sa_flags = SA_RESETHAND | SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &previous_);
  }
  ~InterruptHandler() { sigaction(SIGINT, &previous_, nullptr); }
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

 private:
  struct sigaction previous_ {};
};

void run_bench(const BenchArguments& arguments) {
  check_list(arguments.chunk_sizes, "--chunk-size");
  check_list(arguments.concurrencies, "--concurrency");
  bench::SweepGrid grid;
  grid.chunk_sizes.clear();
  grid.concurrencies.clear();
  for (const auto& text : arguments.chunk_sizes) {
    grid.chunk_sizes.push_back(parse_chunk_size(text));
  }
  for (const auto& text : arguments.concurrencies) {
    grid.concurrencies.push_back(parse_concurrency(text));
  }
  check_writable(arguments.csv, "--csv");
  check_writable(arguments.svg, "--svg");

  bench::SweepOptions options;
  options.repeat = arguments.repeat;
  if (arguments.max_bytes) {
    options.max_bytes = parse_positive_size(*arguments.max_bytes, "--max-bytes");
  }
  options.ceiling = arguments.ceiling;
  options.seed = arguments.seed;
  options.stream.memory_limit = parse_positive_size(arguments.memory_limit, "--memory-limit");
  check_rank_flags(arguments.rank, arguments.tensor_parallel_size);
  options.stream.io_threads = arguments.io_threads;
  options.stream.rank = arguments.rank;
  options.stream.tensor_parallel_size = arguments.tensor_parallel_size;
  options.stream.store = apply_store_flags(arguments.store);
  options.stream.select = tensor_selection(arguments.filter);
  options.on_plan = report_plan;
  options.on_run = report_step;

  const std::string url =
      arguments.url ? *arguments.url
                    : ModelLoaderConfig::from_environment().required_remote_model_path();
  options.stop_requested = [] { return sweep_interrupted.load(); };
  const InterruptHandler interrupt_handler;
  const bench::SweepResult result = bench::sweep(url, grid, options);
  require_selected(arguments.filter, result.tensors, url);
  if (!arguments.csv.empty()) write_file(arguments.csv, bench::sweep_csv(result));
  if (!arguments.svg.empty()) write_file(arguments.svg, bench::sweep_svg(result));
  const std::string report = arguments.json ? bench::sweep_json(result) : bench::sweep_table(result);
  std::fputs(report.c_str(), stdout);
  std::fflush(stdout);
  if (result.interrupted) {
    throw Cancelled("bench interrupted after " + counted(result.runs_finished, "run") + " of " +
                    std::to_string(result.runs_planned) +
                    ": the report holds the runs that finished");
  }
}

}  // namespace

void register_bench_command(CLI::App& app) {
  auto arguments = std::make_shared<BenchArguments>();
  auto* command = app.add_subcommand(
      "bench", "Stream a checkpoint with every chunk size x concurrency and say which is fastest");
  command->add_option("url", arguments->url,
                      "What to stream, as `stream` takes it; default: the configured remote "
                      "model path");
  command->add_option("--chunk-size", arguments->chunk_sizes, "Chunk sizes to try, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--concurrency", arguments->concurrencies,
                      "Concurrencies to try, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("--repeat", arguments->repeat,
                      "Runs per cell, each repeat in a new random order")
      ->capture_default_str()
      ->check(positive_number);
  command->add_option("--max-bytes", arguments->max_bytes,
                      "Stream only the first tensors adding up to at most this much, e.g. 2GiB");
  command->add_flag("--ceiling", arguments->ceiling,
                    "Also time plain parallel range reads of the same bytes at each concurrency");
  command->add_flag("--json", arguments->json, "Print one JSON object instead of the table");
  command->add_option("--csv", arguments->csv, "Also write one CSV row per run to this file");
  command->add_option("--svg", arguments->svg, "Also write an SVG heatmap to this file");
  command->add_option("--memory-limit", arguments->memory_limit, "Tensor memory held at once")
      ->capture_default_str();
  command->add_option("--io-threads", arguments->io_threads, "I/O threads")
      ->capture_default_str()
      ->check(whole_number_up_to(tensorstream::detail::max_io_threads_limit));
  command->add_option("--tp", arguments->tensor_parallel_size,
                      "Tensor-parallel size, as for `stream`")
      ->check(positive_number);
  command->add_option("--rank", arguments->rank, "Tensor-parallel rank")->capture_default_str();
  command->add_option("--seed", arguments->seed, "Seed of the shuffled order (default: random)");
  add_tensor_filter_flags(*command, arguments->filter);
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_bench(*arguments); });
}

}  // namespace tensorstream::cli
