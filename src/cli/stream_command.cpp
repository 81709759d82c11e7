#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "base/byte_size.hpp"
#include "base/process_cpu.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/group_flags.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/progress_bar.hpp"
#include "cli/progress_flag.hpp"
#include "cli/sha256.hpp"
#include "cli/store_flags.hpp"
#include "cli/tensor_filter_flags.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/model_loader_config.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::cli {
namespace {

// Unset URL and sizes come from the environment (ModelLoaderConfig), then the defaults.
struct StreamArguments {
  std::optional<std::string> url;
  std::optional<std::string> chunk_size;
  std::optional<std::size_t> concurrency;
  std::string memory_limit = "512MiB";
  std::size_t io_threads = StreamerOptions{}.io_threads;
  int rank = 0;
  std::optional<int> tensor_parallel_size;
  GroupFlags group;
  bool json = false;
  std::string progress;
  std::string checksum;
  TensorFilterFlags filter;
  StoreFlags store;
};

std::string tensor_line(const StreamedTensor& tensor, const std::string& digest) {
  std::string line = "{";
  append_key(line, "name");
  append_json_string(line, tensor.info.name);
  append_key(line, "dtype");
  append_json_string(line, dtype_name(tensor.info.dtype));
  append_key(line, "shape");
  append_int_array(line, tensor.info.shape);
  append_key(line, "bytes");
  line += std::to_string(tensor.info.byte_size());
  if (!digest.empty()) {
    append_key(line, "sha256");
    append_json_string(line, digest);
  }
  line += '}';
  return line;
}

// "TP4/shard1" for a stream of one tensor-parallel rank, as a TRAW partition names its prefix;
// empty for a whole model.
std::string partition_name(const StreamerOptions& options) {
  if (!options.tensor_parallel_size) return "";
  return "TP" + std::to_string(*options.tensor_parallel_size) + "/shard" +
         std::to_string(options.rank);
}

// Everything the human line says, and the settings the stream ran with.
std::string summary_line(const StreamStats& stats, const StreamerOptions& options) {
  char text[512];
  std::snprintf(text, sizeof text,
                "{\"summary\":{\"tensors\":%llu,\"bytes\":%llu,\"seconds\":%.6f,\"gb_per_s\":%.6f,"
                "\"first_tensor_ms\":%.3f,\"requests\":%llu,\"retries\":%llu,\"connections\":%llu,"
                "\"peak_memory\":%llu,\"fresh_memory\":%llu,\"chunk_size\":%llu,\"concurrency\":%zu,"
                "\"cpu_seconds\":%.3f,\"io_mode\":",
                static_cast<unsigned long long>(stats.tensors),
                static_cast<unsigned long long>(stats.bytes), stats.elapsed_seconds,
                stats.gigabytes_per_second(),
                stats.first_tensor_seconds < 0 ? 0.0 : stats.first_tensor_seconds * 1e3,
                static_cast<unsigned long long>(stats.requests),
                static_cast<unsigned long long>(stats.retries),
                static_cast<unsigned long long>(stats.connections),
                static_cast<unsigned long long>(stats.peak_memory),
                static_cast<unsigned long long>(stats.fresh_memory),
                static_cast<unsigned long long>(stats.chunk_size), *options.max_concurrency,
                process_cpu_seconds());
  std::string line = text;
  append_json_string(line, stats.io_mode);
  if (const std::string partition = partition_name(options); !partition.empty()) {
    append_key(line, "partition");
    append_json_string(line, partition);
  }
  if (stats.direct_bytes > 0) line += ",\"direct_bytes\":" + std::to_string(stats.direct_bytes);
  if (stats.io_mode.ends_with("cache")) {
    line += ",\"cache_bytes\":" + std::to_string(stats.cached_bytes) +
            ",\"source_bytes\":" + std::to_string(stats.source_bytes);
  }
  if (stats.group_size > 1) {
    line += ",\"group_size\":" + std::to_string(stats.group_size) +
            ",\"broadcast_bytes\":" + std::to_string(stats.broadcast_bytes);
  }
  return line + "}}";
}

void run_stream(const StreamArguments& arguments) {
  if (!arguments.checksum.empty() && arguments.checksum != "sha256") {
    throw InvalidArgument("--checksum: unsupported algorithm '" + arguments.checksum +
                          "' (supported: sha256)");
  }
  StreamerOptions options;
  if (arguments.chunk_size) {
    options.chunk_size = parse_chunk_size(*arguments.chunk_size);
  }
  options.max_concurrency = arguments.concurrency;
  options.memory_limit = parse_positive_size(arguments.memory_limit, "--memory-limit");
  options.io_threads = arguments.io_threads;
  // In a world of processes, --rank is the process's rank there; the tensor-parallel rank is
  // its remainder by --tp, as when consecutive ranks form a model's tensor-parallel group.
  options.distributed = distributed_options(arguments.group, arguments.rank);
  options.rank = arguments.rank;
  const int tensor_parallel_size = arguments.tensor_parallel_size.value_or(1);
  if (!options.distributed.enabled()) check_rank_flags(arguments.rank, arguments.tensor_parallel_size);
  if (options.distributed.enabled()) {
    if (arguments.group.world_size % tensor_parallel_size != 0) {
      throw InvalidArgument("--world-size " + std::to_string(arguments.group.world_size) +
                            " is not a multiple of --tp " + std::to_string(tensor_parallel_size));
    }
    if (arguments.rank >= 0) options.rank = arguments.rank % tensor_parallel_size;
  }
  options.tensor_parallel_size = arguments.tensor_parallel_size;
  options.store = apply_store_flags(arguments.store);
  options.select = tensor_selection(arguments.filter);

  const ModelLoaderConfig config = ModelLoaderConfig::from_environment();
  const std::string url = arguments.url ? *arguments.url : config.required_remote_model_path();
  // Resolved here as well as in the stream, for the summary to say what was used. The chunk
  // size stays unset unless the environment sets it: the stream then takes the store's preferred
  // size (64 MiB for az://), which a chunk size set here would override.
  if (!options.max_concurrency) options.max_concurrency = config.max_concurrency;
  RawStreamer streamer(url, options);
  std::optional<ProgressDisplay> progress;
  if (const auto style = progress_style(arguments.progress, arguments.json)) {
    progress.emplace(*style, [&streamer] {
      const StreamStats stats = streamer.stats();
      std::string tensors;
      if (stats.total_tensors > 0) {
        tensors = std::to_string(stats.tensors) + "/" + std::to_string(stats.total_tensors) +
                  " tensors";
      }
      return ProgressSample{stats.bytes, stats.total_bytes, tensors, stats.waiting_for,
                            stats.waiting_seconds};
    });
  }

  while (auto tensor = streamer.next_blocking()) {
    const std::string digest = arguments.checksum.empty() ? "" : sha256_hex(tensor->bytes());
    if (arguments.json) {
      std::puts(tensor_line(*tensor, digest).c_str());
    } else if (!digest.empty()) {
      std::printf("%s  %s\n", digest.c_str(), tensor->info.name.c_str());
    }
    // A line as each tensor completes, also into a pipe, where stdout is block-buffered.
    std::fflush(stdout);
  }
  const StreamStats stats = streamer.stats();
  require_selected(arguments.filter, stats.tensors, url);
  if (progress) progress->finish();
  if (arguments.json) {
    std::puts(summary_line(stats, options).c_str());
  } else {
    std::string group;
    if (stats.group_size > 1) {
      group = ", " + format_byte_size(stats.broadcast_bytes) + " broadcast by " +
              std::to_string(stats.group_size - 1) + " other rank" +
              (stats.group_size > 2 ? "s" : "");
    }
    std::string partition = partition_name(options);
    if (!partition.empty()) partition = " of " + partition;
    std::string io_mode = stats.io_mode;
    if (stats.direct_bytes > 0) io_mode += " (" + format_byte_size(stats.direct_bytes) + " direct)";
    if (stats.io_mode.ends_with("cache")) {
      io_mode += " (" + format_byte_size(stats.cached_bytes) + " from the cache)";
    }
    // A checkpoint without tensors has no first one to time.
    char first[64] = "";
    if (stats.first_tensor_seconds >= 0) {
      std::snprintf(first, sizeof first, ", first tensor after %.1f ms",
                    stats.first_tensor_seconds * 1e3);
    }
    std::printf("streamed %s (%s)%s from %s in %.3f s: %s%s [%s, %s, %s, peak memory %s%s]\n",
                counted(stats.tensors, "tensor").c_str(), format_byte_size(stats.bytes).c_str(),
                partition.c_str(), redact_query(url).c_str(), stats.elapsed_seconds,
                format_byte_rate(stats.bytes, stats.elapsed_seconds).c_str(), first,
                io_mode.c_str(),
                counted(stats.requests, "request").c_str(),
                counted(stats.retries, "retry", "retries").c_str(),
                format_byte_size(stats.peak_memory).c_str(), group.c_str());
  }
  std::fflush(stdout);
}

}  // namespace

void register_stream_command(CLI::App& app) {
  auto arguments = std::make_shared<StreamArguments>();
  auto* command = app.add_subcommand("stream", "Stream every tensor of a checkpoint and drop it");
  command->add_option("url", arguments->url,
                      "File, index, directory or prefix: /path, file:///path, "
                      "http(s)://host/path, s3://bucket/prefix/, gs://, az://container/prefix/, "
                      "hf://org/name[@revision]; default: "
                      "the configured remote model path");
  command->add_option("--chunk-size", arguments->chunk_size,
                      "Bytes per range read, in KiB/MiB/GiB or KB/MB/GB (a bare 8M is refused as "
                      "ambiguous); default: TENSORSTREAM_CHUNK_SIZE, else 16MiB (64MiB for az://)");
  command->add_option("--concurrency", arguments->concurrency,
                      "Range reads in flight; default: the configured concurrency, 32 unless set")
      ->check(whole_number_up_to(tensorstream::detail::max_concurrency_limit));
  command->add_option("--memory-limit", arguments->memory_limit,
                      "Tensor memory held at once")
      ->capture_default_str();
  command->add_option("--io-threads", arguments->io_threads, "I/O threads")
      ->capture_default_str()
      ->check(whole_number_up_to(tensorstream::detail::max_io_threads_limit));
  command->add_option("--rank", arguments->rank,
                      "Tensor-parallel rank; with --world-size, the rank in the world (the "
                      "tensor-parallel rank is then RANK modulo --tp)")
      ->capture_default_str();
  command->add_option("--tp", arguments->tensor_parallel_size,
                      "Tensor-parallel size: selects TP{N}/shard{RANK}/ under a TRAW model "
                      "prefix; above 1, the rank files model-rank-{RANK}-part-*.safetensors")
      ->check(positive_number);
  add_group_flags(*command, arguments->group);
  command->add_flag("--json", arguments->json, "One JSON object per tensor, then a summary");
  add_progress_flag(*command, arguments->progress);
  add_tensor_filter_flags(*command, arguments->filter);
  add_store_flags(*command, arguments->store);
  command->add_option("--checksum", arguments->checksum, "Hash each tensor's bytes: sha256");
  command->callback([arguments] { run_stream(*arguments); });
}

}  // namespace tensorstream::cli
