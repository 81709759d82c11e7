#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/progress_bar.hpp"
#include "cli/progress_flag.hpp"
#include "cli/store_flags.hpp"
#include "tensorstream/storage/url.hpp"
#include "transfer/shard_checkpoint.hpp"

namespace tensorstream::cli {
namespace {

struct ShardArguments {
  std::string source;
  std::string destination;
  int tensor_parallel_size = 0;
  std::optional<std::int64_t> kv_heads;
  std::string max_part_size = "5GiB";
  bool overwrite = false;
  bool json = false;
  std::string progress;
  SourceReadFlags read;
  StoreFlags store;
};

std::string summary_json(const ShardArguments& arguments, const ShardReport& report,
                         double seconds) {
  std::string line =
      transfer_summary_start(redact_query(arguments.source), arguments.destination);
  append_key(line, "tp");
  line += std::to_string(arguments.tensor_parallel_size);
  append_key(line, "tensors");
  line += std::to_string(report.tensors);
  append_key(line, "bytes_read");
  line += std::to_string(report.source_bytes);
  append_key(line, "files");
  line += std::to_string(report.files.size());
  append_key(line, "bytes_written");
  line += std::to_string(report.bytes);
  append_decimal(line, "seconds", seconds);
  return line + "}}";
}

void run_shard(const ShardArguments& arguments) {
  ShardOptions options;
  options.tensor_parallel_size = arguments.tensor_parallel_size;
  options.num_key_value_heads = arguments.kv_heads;
  options.max_part_size = parse_positive_size(arguments.max_part_size, "--max-part-size");
  options.stream = apply_source_read_flags(arguments.read, arguments.store);
  options.overwrite = arguments.overwrite;

  // Set on the thread that runs the copy, read by the display's.
  std::mutex progress_mutex;
  ShardProgress latest;
  options.on_progress = [&](const ShardProgress& progress) {
    const std::lock_guard lock(progress_mutex);
    latest = progress;
  };
  std::optional<ProgressDisplay> display;
  if (const auto style = progress_style(arguments.progress, arguments.json)) {
    display.emplace(*style, [&] {
      const std::lock_guard lock(progress_mutex);
      std::string detail;
      if (latest.tensors > 0) {
        detail = std::to_string(latest.tensors_written) + "/" + std::to_string(latest.tensors) +
                 " tensors";
      }
      return ProgressSample{latest.bytes_written, latest.bytes, detail, latest.waiting_for,
                            latest.waiting_seconds};
    });
  }

  const auto start = std::chrono::steady_clock::now();
  const ShardReport report = shard_checkpoint(arguments.source, arguments.destination, options);
  if (display) display->finish();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  if (arguments.json) {
    std::puts(summary_json(arguments, report, elapsed.count()).c_str());
  } else {
    std::printf(
        "sharded %s (%s) from %s over %s into %s (%s) in %s in %.3f s\n",
        counted(report.tensors, "tensor").c_str(), format_byte_size(report.source_bytes).c_str(),
        redact_query(arguments.source).c_str(),
        counted(static_cast<std::uint64_t>(arguments.tensor_parallel_size), "rank").c_str(),
        counted(report.files.size(), "file").c_str(), format_byte_size(report.bytes).c_str(),
        arguments.destination.c_str(), elapsed.count());
  }
  std::fflush(stdout);
}

}  // namespace

void register_shard_command(CLI::App& app) {
  auto arguments = std::make_shared<ShardArguments>();
  auto* command = app.add_subcommand(
      "shard", "Write the tensor-parallel rank files model-rank-R-part-K.safetensors of a model");
  command
      ->add_option("src", arguments->source,
                   "Checkpoint to split: file, directory or prefix, as for stream")
      ->required();
  command
      ->add_option("dst", arguments->destination,
                   "Directory to write the rank files into (created if missing), or the URL of a "
                   "prefix of a store that can write: file://, s3://, ...")
      ->required();
  command->add_option("--tp", arguments->tensor_parallel_size, "Tensor-parallel size")
      ->required()
      ->check(positive_number);
  command
      ->add_option("--kv-heads", arguments->kv_heads,
                   "Key-value heads, instead of num_key_value_heads from SRC's config.json")
      ->check(positive_number);
  command
      ->add_option("--max-part-size", arguments->max_part_size,
                   "Most tensor bytes per file; files are split between tensors")
      ->capture_default_str();
  command->add_flag("--overwrite", arguments->overwrite,
                    "Write into a destination that holds rank files already, replacing them");
  command->add_flag("--json", arguments->json, "Print the summary as one JSON object");
  add_progress_flag(*command, arguments->progress);
  add_source_read_flags(*command, arguments->read, "Tensor memory of SRC held at once");
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_shard(*arguments); });
}

}  // namespace tensorstream::cli
