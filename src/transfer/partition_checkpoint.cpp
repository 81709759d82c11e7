#include "tensorstream/transfer/partition_checkpoint.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>

#include "async/run_on_strand.hpp"
#include "base/blocking_run.hpp"
#include "base/byte_size.hpp"
#include "base/json_string.hpp"
#include "model/read_head_config.hpp"
#include "storage/write_destination.hpp"
#include "streaming/discovery.hpp"
#include "streaming/run_concurrently.hpp"
#include "streaming/wait_watch.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/partition_rules.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"
#include "tensorstream/transfer/prefetch.hpp"
#include "tensorstream/traw/format.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;

// Rank tensors are cut out of the source tensor into a buffer of this size, piece by piece,
// whatever their size: the writers copy what they are given anyway.
constexpr std::size_t cut_buffer_size = std::size_t{1} << 20;

// Weights in formats other than safetensors that a Hugging Face repository may carry beside it:
// not artifacts to copy, and `.bin` would read as TRAW shards under the destination.
const std::vector<std::string> other_weight_suffixes{
    ".safetensors.index.json", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf"};

void validate(const PartitionOptions& options) {
  if (options.tensor_parallel_sizes.empty()) {
    throw InvalidArgument("partition: no tensor-parallel size to write");
  }
  std::set<int> seen;
  for (const int size : options.tensor_parallel_sizes) {
    if (size < 1) {
      throw InvalidArgument("partition: tensor-parallel sizes must be at least 1, got " +
                            std::to_string(size));
    }
    if (!seen.insert(size).second) {
      throw InvalidArgument("partition: tensor-parallel size " + std::to_string(size) +
                            " is listed twice");
    }
  }
  if (options.num_key_value_heads && *options.num_key_value_heads < 1) {
    throw InvalidArgument("partition: num_key_value_heads must be at least 1, got " +
                          std::to_string(*options.num_key_value_heads));
  }
  if (options.max_uploads == 0) throw InvalidArgument("partition: max_uploads must be at least 1");
}

// A tensor name becomes an object name: it must not reach into other directories.
bool is_plain_object_name(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

// One rank's part of a source tensor, and where it goes.
struct RankPart {
  int tp_size = 1;
  int rank = 0;
  TensorPartition partition;
  std::uint64_t bytes = 0;           // of the rank's tensor
  std::string key;                   // TRAW: the object; safetensors: unused
  std::vector<std::byte> header;     // TRAW: the object's header
  std::size_t writer = 0;            // safetensors: index of the rank's file writer
};

// A source tensor and every part that is written of it.
struct PlannedTensor {
  TensorSpec spec;
  std::vector<RankPart> parts;
};

// One output file per rank (safetensors format).
struct RankFile {
  std::string key;
  std::string header;
  std::uint64_t bytes = 0;  // header included
};

// Every tensor cut for every size and rank, checked up front so that no bad tensor is found
// after uploads began.
struct Plan {
  std::vector<PlannedTensor> tensors;
  std::unordered_map<std::string, std::size_t> index;
  std::vector<RankFile> files;  // safetensors format only
  std::uint64_t source_bytes = 0;
  std::uint64_t bytes_to_write = 0;
  std::size_t objects = 0;
};

std::string shard_prefix(const std::string& prefix, int tp_size, int rank) {
  return prefix + "TP" + std::to_string(tp_size) + "/shard" + std::to_string(rank) + "/";
}

Plan make_plan(const std::vector<detail::SourceFile>& files, const HeadConfig& heads,
               const PartitionOptions& options, const std::string& prefix) {
  Plan plan;
  for (const auto& file : files) {
    for (const auto& info : file.header.tensors) {
      const TensorSpec spec{info.name, info.dtype, info.shape};
      if (!has_partition_rule(spec.name) && spec.shape.size() >= 2) {
        throw InvalidArgument(
            file.url + ": tensor " + json_string(spec.name) +
            " cannot be placed: it is not a module of a Llama model (q/k/v/o_proj, gate/up/down_proj, "
            "embed_tokens, lm_head) and has " + std::to_string(spec.shape.size()) +
            " dimensions, so neither splitting nor replicating it is known to be right");
      }
      if (options.format == PartitionFormat::traw && !is_plain_object_name(spec.name)) {
        throw InvalidArgument(file.url + ": tensor " + json_string(spec.name) +
                              " cannot be a TRAW object name (it is empty or holds '/')");
      }
      plan.index.emplace(spec.name, plan.tensors.size());
      plan.source_bytes += tensor_byte_size(spec);
      plan.tensors.push_back({spec, {}});
    }
  }

  for (const int tp_size : options.tensor_parallel_sizes) {
    for (int rank = 0; rank < tp_size; ++rank) {
      std::vector<TensorSpec> rank_specs;
      for (auto& tensor : plan.tensors) {
        RankPart part;
        part.tp_size = tp_size;
        part.rank = rank;
        part.partition = partition_tensor(tensor.spec, heads, tp_size, rank);
        const TensorSpec rank_spec{tensor.spec.name, tensor.spec.dtype, part.partition.shape};
        part.bytes = tensor_byte_size(rank_spec);
        if (options.format == PartitionFormat::traw) {
          part.key = traw_partition_key(prefix, tp_size, rank, tensor.spec.name);
          const std::vector<std::uint64_t> shape(rank_spec.shape.begin(), rank_spec.shape.end());
          try {
            part.header = traw::encode_header(shape, rank_spec.dtype);
          } catch (const InvalidArgument& error) {
            throw InvalidArgument("tensor " + json_string(tensor.spec.name) +
                                  " cannot be stored as TRAW: " + error.what());
          }
          plan.bytes_to_write += part.header.size() + part.bytes;
          ++plan.objects;
        } else {
          part.writer = plan.files.size();
          rank_specs.push_back(rank_spec);
        }
        tensor.parts.push_back(std::move(part));
      }
      if (options.format == PartitionFormat::safetensors) {
        RankFile file{shard_prefix(prefix, tp_size, rank) + "model.safetensors",
                      encode_header(rank_specs)};
        file.bytes = file.header.size();
        for (const auto& spec : rank_specs) file.bytes += tensor_byte_size(spec);
        plan.bytes_to_write += file.bytes;
        ++plan.objects;
        plan.files.push_back(std::move(file));
      }
    }
  }
  return plan;
}

// Refuses a destination that holds objects, unless told to write over them. Listing it is also
// what finds an unreachable destination before any upload starts.
asio::awaitable<void> check_destination(const detail::WriteDestination& destination,
                                        bool overwrite) {
  ObjectStore& store = *destination.store;
  if (destination.local && !std::filesystem::exists(destination.prefix)) co_return;
  const auto objects = co_await store.list(destination.prefix, ListDepth::recursive);
  if (overwrite) co_return;
  const auto first = std::find_if(objects.begin(), objects.end(),
                                  [](const ObjectInfo& object) { return !object.key.ends_with('/'); });
  if (first == objects.end()) co_return;
  std::string name = store.url(destination.prefix);
  name.pop_back();
  throw InvalidArgument(name + " is not empty (it holds " + std::to_string(objects.size()) +
                        " objects, e.g. " + store.url(first->key) +
                        "); pass --overwrite to write into it");
}

// What of the memory limit is left for source tensors once the writers that are open at once have
// their buffers: each a cut buffer and, for a bucket, the object or part being filled plus the
// parts in flight (a local file is written through).
std::uint64_t tensor_memory(const PartitionOptions& options,
                            const detail::WriteDestination& destination) {
  std::uint64_t writers = options.max_uploads;
  if (options.format == PartitionFormat::safetensors) {
    // One file per rank of every size.
    writers = 0;
    for (const int size : options.tensor_parallel_sizes) writers += static_cast<std::uint64_t>(size);
  }
  const WriteOptions& write = options.write;
  std::uint64_t per_writer = cut_buffer_size;
  if (!destination.local) {
    per_writer += std::max(write.single_put_limit, write.part_size) +
                  write.part_size * write.max_parts_in_flight;
  }
  const std::uint64_t limit = options.stream.memory_limit;
  const std::uint64_t buffers = writers * per_writer;
  if (buffers >= limit) {
    throw InvalidArgument("partition: a memory limit of " + format_byte_size(limit) +
                          " leaves nothing for source tensors beside the buffers of " +
                          std::to_string(writers) + " objects written at once (" +
                          format_byte_size(buffers) +
                          "); raise the memory limit or write fewer objects at once");
  }
  return limit - buffers;
}

// Appends the rank's tensor of `source` (the full tensor's bytes) to `writer`, cut through
// `buffer`.
asio::awaitable<void> write_part(ObjectWriter& writer, const TensorSpec& full, const RankPart& part,
                                 std::span<const std::byte> source, std::vector<std::byte>& buffer,
                                 const std::function<void(std::uint64_t)>& on_written) {
  for (std::uint64_t done = 0; done < part.bytes;) {
    const auto piece = std::min<std::uint64_t>(part.bytes - done, cut_buffer_size);
    buffer.resize(static_cast<std::size_t>(piece));
    fill_partition_bytes(full, part.partition, source, done, buffer);
    co_await writer.write(buffer);
    done += piece;
    on_written(piece);
  }
}

// A source tensor received and the parts of it still being written.
struct HeldTensor {
  std::size_t index = 0;
  StreamedTensor tensor;
  std::size_t parts_left = 0;
};

// One part to write: the TRAW object of `part` of `held`'s tensor.
struct Job {
  std::shared_ptr<HeldTensor> held;
  std::size_t part = 0;
};

class CheckpointPartitioner {
 public:
  CheckpointPartitioner(std::string source, Plan plan, ObjectStore& destination,
                        PartitionOptions options, PartitionProgress& progress,
                        detail::WaitWatch& waits)
      : source_(std::move(source)), plan_(std::move(plan)), destination_(destination),
        options_(std::move(options)), progress_(progress), waits_(waits) {
    progress_.bytes_to_read = plan_.source_bytes;
    progress_.bytes_to_write = plan_.bytes_to_write;
    progress_.tensors = plan_.tensors.size();
    progress_.objects = plan_.objects;
    for (const auto& tensor : plan_.tensors) unread_sizes_.insert(tensor_byte_size(tensor.spec));
  }

  asio::awaitable<void> run() {
    report_progress();
    StreamerOptions stream = options_.stream;
    stream.rank = 0;
    stream.tensor_parallel_size = 1;
    if (options_.format == PartitionFormat::safetensors) {
      // Rank files are written front to back; see write_rank_files().
      stream.read_order = ReadOrder::file_order;
    }
    RawStreamer streamer(source_, stream);
    const auto watching = waits_.watch(streamer);
    if (options_.format == PartitionFormat::traw) {
      co_await detail::run_concurrently(1 + options_.max_uploads,
                                        [&](std::size_t task) -> asio::awaitable<void> {
                                          if (task == 0) return produce(streamer);
                                          return upload();
                                        });
    } else {
      co_await write_rank_files(streamer);
    }
  }

  const PartitionProgress& progress() const { return progress_; }

 private:
  void report_progress() {
    if (options_.on_progress) options_.on_progress(progress_);
  }

  // The planned tensor a streamed one is, which must be as the headers read up front said.
  std::size_t planned_index(const StreamedTensor& tensor) const {
    const TensorSpec spec{tensor.info.name, tensor.info.dtype, tensor.info.shape};
    const auto found = plan_.index.find(spec.name);
    if (found == plan_.index.end() || plan_.tensors[found->second].spec != spec) {
      throw Error(tensor.object + ": tensor " + json_string(spec.name) +
                  " is not as the headers read before streaming said (did the checkpoint "
                  "change?)");
    }
    return found->second;
  }

  void received(const StreamedTensor& tensor) {
    const auto bytes = tensor.info.byte_size();
    unread_sizes_.erase(unread_sizes_.find(bytes));
    held_bytes_ += bytes;
    progress_.bytes_read += bytes;
    report_progress();
  }

  void released(std::uint64_t bytes) {
    held_bytes_ -= bytes;
    ++progress_.tensors_done;
    report_progress();
    state_changed_.notify_all();
  }

  // Whether the next tensor can be taken without the stream finding its memory held by tensors
  // still being uploaded (the stream fails rather than wait for a consumer holding it all).
  bool room_for_next() const {
    if (held_bytes_ == 0 || unread_sizes_.empty()) return true;
    // Small tensors are read in shared runs of at most min(chunk size, limit / 4) bytes, each
    // copied out of its run: up to twice that is held while a run lands. An unset chunk size is
    // the default one, unless the environment raises it.
    const std::uint64_t limit = options_.stream.memory_limit;
    const std::uint64_t run =
        2 * std::min(options_.stream.chunk_size.value_or(std::uint64_t{16} << 20), limit / 4);
    return held_bytes_ + std::max(*unread_sizes_.rbegin(), run) <= limit;
  }

  // TRAW: takes each tensor from the stream as memory allows and queues its parts.
  asio::awaitable<void> produce(RawStreamer& streamer) {
    for (;;) {
      co_await state_changed_.wait([this] { return room_for_next(); });
      auto tensor = co_await streamer.next();
      if (!tensor) break;
      const auto index = planned_index(*tensor);
      received(*tensor);
      auto held = std::make_shared<HeldTensor>();
      held->index = index;
      held->tensor = std::move(*tensor);
      held->parts_left = plan_.tensors[index].parts.size();
      for (std::size_t part = 0; part < held->parts_left; ++part) jobs_.push_back({held, part});
      state_changed_.notify_all();
    }
    produced_ = true;
    state_changed_.notify_all();
    if (progress_.bytes_read != plan_.source_bytes) {
      throw Error(source_ + ": the stream ended before every tensor was read");
    }
  }

  // TRAW: writes queued parts, one object at a time.
  asio::awaitable<void> upload() {
    std::vector<std::byte> buffer;
    for (;;) {
      co_await state_changed_.wait([this] { return !jobs_.empty() || produced_; });
      if (jobs_.empty()) co_return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      const PlannedTensor& planned = plan_.tensors[job.held->index];
      const RankPart& part = planned.parts[job.part];
      auto writer = destination_.create_writer(part.key, options_.write);
      co_await detail::commit_or_abort(*writer,
                                       write_object(*writer, planned, part, *job.held, buffer));
      ++progress_.objects_written;
      if (--job.held->parts_left == 0) {
        const auto bytes = job.held->tensor.info.byte_size();
        job.held.reset();
        released(bytes);
      } else {
        report_progress();
      }
    }
  }

  asio::awaitable<void> write_object(ObjectWriter& writer, const PlannedTensor& planned,
                                     const RankPart& part, const HeldTensor& held,
                                     std::vector<std::byte>& buffer) {
    co_await writer.write(part.header);
    written(part.header.size());
    co_await write_part(writer, planned.spec, part, held.tensor.bytes(), buffer,
                        [this](std::uint64_t bytes) { written(bytes); });
  }

  void written(std::uint64_t bytes) {
    progress_.bytes_written += bytes;
    report_progress();
  }

  // Safetensors: every rank's file is open at once and takes the tensors in the source's order,
  // which the stream reserves memory in, so waiting for the next one never starves it.
  asio::awaitable<void> write_rank_files(RawStreamer& streamer) {
    std::vector<std::unique_ptr<ObjectWriter>> writers;
    for (const auto& file : plan_.files) {
      writers.push_back(destination_.create_writer(file.key, options_.write));
    }
    std::exception_ptr error;
    try {
      co_await fill_rank_files(streamer, writers);
    } catch (...) {
      error = std::current_exception();
    }
    if (!error) co_return;
    std::vector<ObjectWriter*> open;
    for (auto& writer : writers) open.push_back(writer.get());
    co_await detail::abort_after_failure(open);
    std::rethrow_exception(error);
  }

  asio::awaitable<void> fill_rank_files(RawStreamer& streamer,
                                        std::vector<std::unique_ptr<ObjectWriter>>& writers) {
    std::vector<std::vector<std::byte>> buffers(writers.size());
    co_await detail::run_concurrently(writers.size(), [&](std::size_t i) -> asio::awaitable<void> {
      co_await writers[i]->write(std::as_bytes(std::span(plan_.files[i].header)));
      written(plan_.files[i].header.size());
    });
    std::map<std::size_t, StreamedTensor> early;
    for (std::size_t next = 0; next < plan_.tensors.size();) {
      const auto found = early.find(next);
      if (found == early.end()) {
        auto tensor = co_await streamer.next();
        if (!tensor) throw Error(source_ + ": the stream ended before every tensor was read");
        const auto index = planned_index(*tensor);
        received(*tensor);
        early.emplace(index, std::move(*tensor));
        continue;
      }
      const PlannedTensor& planned = plan_.tensors[next];
      const StreamedTensor& tensor = found->second;
      co_await detail::run_concurrently(
          planned.parts.size(), [&](std::size_t i) -> asio::awaitable<void> {
            const RankPart& part = planned.parts[i];
            co_await write_part(*writers[part.writer], planned.spec, part, tensor.bytes(),
                                buffers[part.writer], [this](std::uint64_t bytes) { written(bytes); });
          });
      const auto bytes = tensor.info.byte_size();
      early.erase(found);
      released(bytes);
      ++next;
    }
    co_await detail::run_concurrently(writers.size(), [&](std::size_t i) -> asio::awaitable<void> {
      co_await writers[i]->commit();
      ++progress_.objects_written;
      report_progress();
    });
  }

  const std::string source_;
  const Plan plan_;
  ObjectStore& destination_;
  const PartitionOptions options_;
  PartitionProgress& progress_;
  detail::WaitWatch& waits_;
  std::multiset<std::uint64_t> unread_sizes_;
  std::uint64_t held_bytes_ = 0;
  std::deque<Job> jobs_;
  bool produced_ = false;
  async::ConditionVariable state_changed_;
};

asio::awaitable<void> run_partition(std::string source, std::string destination,
                                    PartitionOptions options, PartitionProgress& progress,
                                    detail::WaitWatch& waits, PartitionReport& report) {
  const auto executor = co_await asio::this_coro::executor;
  const Url source_url = resolve_url(source);
  const std::string source_prefix =
      source_url.is_prefix() ? source_url.path
                             : source_url.path.substr(0, source_url.path.rfind('/') + 1);
  const auto source_store = open_store(source_url, executor, options.stream.store);
  const auto watching_source = waits.watch(*source_store);
  // Local directories by their absolute path, which is how stores key them; a mistyped URL is
  // refused first, before it becomes a path.
  if (Url::parse(destination).scheme == "file" && destination.find("://") == std::string::npos) {
    destination = std::filesystem::absolute(destination).lexically_normal().string();
  }
  const auto target =
      detail::open_write_destination(destination, executor, options.stream.store, "config.json");
  ObjectStore& destination_store = *target.store;
  const auto watching_destination = waits.watch(destination_store);
  options.stream.memory_limit = tensor_memory(options, target);
  co_await check_destination(target, options.overwrite);

  // The checkpoint first, so that a wrong source is named as such rather than by its config.
  const auto files = co_await detail::discover(*source_store, source_url, options.stream);
  report.heads = co_await detail::read_head_config(*source_store, source_prefix + "config.json");
  if (options.num_key_value_heads) report.heads.num_key_value_heads = *options.num_key_value_heads;
  Plan plan = make_plan(files, report.heads, options, target.prefix);
  report.tensors = plan.tensors.size();
  report.source_bytes = plan.source_bytes;
  report.objects = plan.objects;
  report.bytes_written = plan.bytes_to_write;

  if (options.abort_stale) {
    const std::string prefix = target.prefix;
    const std::chrono::system_clock::duration any_age{0};
    const auto stale = co_await destination_store.abort_stale_uploads(prefix, any_age);
    report.stale_uploads_removed = stale.removed.size();
  }

  CheckpointPartitioner partitioner(source, std::move(plan), destination_store, options, progress,
                                    waits);
  co_await partitioner.run();

  // Copied last, so that a config.json in the destination means its weights are complete.
  PrefetchOptions copy;
  copy.exclude_suffixes = other_weight_suffixes;
  const auto artifacts =
      co_await prefetch(*source_store, source_prefix, destination_store, target.prefix, copy);
  report.artifacts = artifacts.files;
  report.artifact_bytes = artifacts.bytes;
}

asio::awaitable<PartitionReport> partition(std::string source, std::string destination,
                                           PartitionOptions options) {
  validate(options);
  PartitionProgress progress;
  detail::WaitWatch waits(co_await asio::this_coro::executor);
  PartitionReport report;
  std::function<void(const detail::LongestWait&)> report_wait =
      detail::reporting_into(progress, options.on_progress);
  asio::awaitable<void> work =
      run_partition(source, destination, options, progress, waits, report);
  co_await detail::with_wait_reports(waits, std::move(work), std::move(report_wait));
  co_return report;
}

}  // namespace

std::string traw_partition_key(const std::string& prefix, int tp_size, int rank,
                               const std::string& tensor_name) {
  return shard_prefix(prefix, tp_size, rank) + tensor_name + ".bin";
}

asio::awaitable<PartitionReport> partition_checkpoint(std::string source, std::string destination,
                                                      PartitionOptions options) {
  // The uploads share state, so they run on one strand even when the caller's executor has
  // several threads.
  const auto strand = asio::make_strand(co_await asio::this_coro::executor);
  co_return co_await async::run_on_strand(
      strand, partition(std::move(source), std::move(destination), std::move(options)));
}

PartitionReport partition_checkpoint_blocking(std::string source, std::string destination,
                                              PartitionOptions options) {
  asio::io_context io;
  PartitionReport report;
  detail::run_blocking(io, [&]() -> asio::awaitable<void> {
    report = co_await partition_checkpoint(std::move(source), std::move(destination),
                                           std::move(options));
  }());
  return report;
}

}  // namespace tensorstream
