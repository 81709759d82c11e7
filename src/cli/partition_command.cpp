#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/byte_size.hpp"
#include "cli/commands.hpp"
#include "cli/counted.hpp"
#include "cli/json_writer.hpp"
#include "cli/number_checks.hpp"
#include "cli/progress_bar.hpp"
#include "cli/progress_flag.hpp"
#include "cli/store_flags.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/transfer/partition_checkpoint.hpp"

namespace tensorstream::cli {
namespace {

struct PartitionArguments {
  std::string source;
  std::string destination;
  std::vector<int> sizes{1, 2, 4, 8};
  std::string format = "traw";
  std::optional<std::int64_t> kv_heads;
  bool overwrite = false;
  bool abort_stale = false;
  std::size_t uploads = PartitionOptions{}.max_uploads;
  SourceReadFlags read;
  bool json = false;
  std::string progress;
  StoreFlags store;
};

PartitionFormat parse_format(const std::string& format) {
  if (format == "traw") return PartitionFormat::traw;
  if (format == "safetensors") return PartitionFormat::safetensors;
  throw InvalidArgument("--format: unknown format '" + format + "' (known: traw, safetensors)");
}

std::string joined(const std::vector<int>& sizes) {
  std::string text;
  for (const int size : sizes) text += (text.empty() ? "" : ",") + std::to_string(size);
  return text;
}

// Counters the run updates and the progress display reads from its own thread.
class SharedProgress {
 public:
  void set(const PartitionProgress& progress) {
    std::lock_guard lock(mutex_);
    progress_ = progress;
  }

  // The bytes written, out of those the run writes.
  ProgressSample sample() const {
    PartitionProgress progress;
    {
      std::lock_guard lock(mutex_);
      progress = progress_;
    }
    std::string tensors;
    if (progress.tensors > 0) {
      tensors = std::to_string(progress.tensors_done) + "/" + std::to_string(progress.tensors) +
                " tensors";
    }
    return {progress.bytes_written, progress.bytes_to_write, tensors, progress.waiting_for,
            progress.waiting_seconds};
  }

 private:
  mutable std::mutex mutex_;
  PartitionProgress progress_;
};

std::string summary_json(const PartitionArguments& arguments, const PartitionReport& report,
                         double seconds) {
  std::string line = transfer_summary_start(arguments.source, arguments.destination);
  append_key(line, "format");
  append_json_string(line, arguments.format);
  append_key(line, "tp");
  const std::vector<std::int64_t> sizes(arguments.sizes.begin(), arguments.sizes.end());
  append_int_array(line, sizes);
  append_key(line, "tensors");
  line += std::to_string(report.tensors);
  append_key(line, "bytes_read");
  line += std::to_string(report.source_bytes);
  append_key(line, "objects");
  line += std::to_string(report.objects);
  append_key(line, "bytes_written");
  line += std::to_string(report.bytes_written);
  append_key(line, "artifacts");
  line += std::to_string(report.artifacts.size());
  append_key(line, "stale_uploads_removed");
  line += std::to_string(report.stale_uploads_removed);
  append_decimal(line, "seconds", seconds);
  return line + "}}";
}

void run_partition(const PartitionArguments& arguments) {
  PartitionOptions options;
  options.tensor_parallel_sizes = arguments.sizes;
  options.format = parse_format(arguments.format);
  options.num_key_value_heads = arguments.kv_heads;
  options.overwrite = arguments.overwrite;
  options.abort_stale = arguments.abort_stale;
  options.max_uploads = arguments.uploads;
  options.stream = apply_source_read_flags(arguments.read, arguments.store);

  SharedProgress shared;
  options.on_progress = [&shared](const PartitionProgress& progress) { shared.set(progress); };
  std::optional<ProgressDisplay> progress;
  if (const auto style = progress_style(arguments.progress, arguments.json)) {
    progress.emplace(*style, [&shared] { return shared.sample(); });
  }

  const auto start = std::chrono::steady_clock::now();
  const PartitionReport report =
      partition_checkpoint_blocking(arguments.source, arguments.destination, options);
  if (progress) progress->finish();
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  if (arguments.json) {
    std::puts(summary_json(arguments, report, elapsed.count()).c_str());
  } else {
    if (arguments.abort_stale) {
      std::printf("removed %zu stale uploads under %s\n", report.stale_uploads_removed,
                  arguments.destination.c_str());
    }
    std::printf(
        "partitioned %s (%s) from %s for TP %s into %s (%s) and %s in %s in %.3f s\n",
        counted(report.tensors, "tensor").c_str(), format_byte_size(report.source_bytes).c_str(),
        redact_query(arguments.source).c_str(), joined(arguments.sizes).c_str(),
        counted(report.objects, arguments.format + " object").c_str(),
        format_byte_size(report.bytes_written).c_str(),
        counted(report.artifacts.size(), "other file").c_str(), arguments.destination.c_str(),
        elapsed.count());
  }
  std::fflush(stdout);
}

}  // namespace

void register_partition_command(CLI::App& app) {
  auto arguments = std::make_shared<PartitionArguments>();
  auto* command = app.add_subcommand(
      "partition",
      "Cut a checkpoint for several tensor-parallel sizes into DST/TP{n}/shard{r}/, one TRAW "
      "object per tensor (or one safetensors file per rank)");
  command
      ->add_option("src", arguments->source,
                   "Checkpoint to cut: file, index, directory or prefix, as for stream; its "
                   "config.json gives the head layout")
      ->required();
  command
      ->add_option("dst", arguments->destination,
                   "Where to write: a local directory, or a file://, s3:// or gs:// prefix")
      ->required();
  command->add_option("--tp", arguments->sizes, "Tensor-parallel sizes, comma-separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(positive_number);
  command->add_option("--format", arguments->format, "traw or safetensors")
      ->capture_default_str();
  command
      ->add_option("--kv-heads", arguments->kv_heads,
                   "Key-value heads, instead of num_key_value_heads from SRC's config.json")
      ->check(positive_number);
  command->add_flag("--overwrite", arguments->overwrite,
                    "Write into a destination that is not empty, replacing objects of the same "
                    "names");
  command->add_flag("--abort-stale", arguments->abort_stale,
                    "First remove what killed runs left under DST (unfinished multipart uploads, "
                    "temporaries); only when no other run writes there");
  command->add_option("--uploads", arguments->uploads, "Objects uploaded at once")
      ->capture_default_str()
      ->check(positive_number);
  command->add_flag("--json", arguments->json, "Print the summary as one JSON object");
  add_progress_flag(*command, arguments->progress);
  add_source_read_flags(*command, arguments->read,
                        "Memory for tensors of SRC and upload buffers together");
  add_store_flags(*command, arguments->store);
  command->callback([arguments] { run_partition(*arguments); });
}

}  // namespace tensorstream::cli
