#include "transfer/shard_checkpoint.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <unordered_map>

#include "base/blocking_run.hpp"
#include "base/json_string.hpp"
#include "model/read_head_config.hpp"
#include "storage/write_destination.hpp"
#include "streaming/discovery.hpp"
#include "streaming/wait_watch.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/partition_rules.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;

// Rank tensors are cut into this buffer and written from it, whatever their size.
constexpr std::uint64_t copy_buffer_size = 16ull << 20;

// The head layout of config.json next to the checkpoint: under the prefix, or in the directory of
// the file.
HeadConfig read_head_config(const std::string& source, const StoreOptions& options) {
  const Url url = resolve_url(source);
  const std::string key = url.path.substr(0, url.path.rfind('/') + 1) + "config.json";
  asio::io_context io;
  auto store = open_store(url, io.get_executor(), options);
  HeadConfig heads;
  detail::run_blocking(io, [&]() -> asio::awaitable<void> {
    heads = co_await detail::read_head_config(*store, key);
  }());
  return heads;
}

void check_options(const ShardOptions& options) {
  if (options.tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size must be at least 1, got " +
                          std::to_string(options.tensor_parallel_size));
  }
  if (options.num_key_value_heads && *options.num_key_value_heads < 1) {
    throw InvalidArgument("num_key_value_heads must be at least 1, got " +
                          std::to_string(*options.num_key_value_heads));
  }
  if (options.max_part_size == 0) throw InvalidArgument("max_part_size must not be 0");
}

// The tensors a stream of the source yields, in file order: the order of a file_order stream's
// reads.
std::vector<TensorSpec> source_tensors(const std::vector<FileHeader>& files) {
  std::vector<TensorSpec> tensors;
  for (const auto& file : files) {
    for (const auto& info : file.header.tensors) {
      tensors.push_back({info.name, info.dtype, info.shape});
    }
  }
  return tensors;
}

bool is_rank_file(std::string_view name) {
  return name.starts_with("model-rank-") && name.find("-part-") != std::string_view::npos &&
         name.ends_with(".safetensors");
}

// One rank's part of a tensor.
struct RankTensor {
  TensorSpec spec;
  TensorPartition partition;
};

// One part file of one rank.
struct Part {
  std::string name;
  std::string header;
  std::size_t end = 0;  // One past the index of its last tensor.
};

// The rank files: every tensor cut for every rank, and the parts each rank's tensors go to.
class ShardLayout {
 public:
  // Cuts every tensor for every rank, which throws before anything is written if one cannot be.
  // Each rank's tensors are split, in order, into parts of at most max_part_size bytes; a rank
  // without tensors gets one empty part.
  ShardLayout(std::vector<TensorSpec> tensors, const HeadConfig& heads, int ranks,
              std::uint64_t max_part_size)
      : sources_(std::move(tensors)), cuts_(sources_.size()), parts_(ranks) {
    for (std::size_t i = 0; i < sources_.size(); ++i) {
      index_.emplace(sources_[i].name, i);
      for (int rank = 0; rank < ranks; ++rank) {
        auto partition = partition_tensor(sources_[i], heads, ranks, rank);
        TensorSpec spec{sources_[i].name, sources_[i].dtype, partition.shape};
        cuts_[i].push_back({std::move(spec), std::move(partition)});
      }
    }
    for (int rank = 0; rank < ranks; ++rank) {
      std::size_t begin = 0;
      do {
        std::vector<TensorSpec> specs;
        std::uint64_t part_bytes = 0;
        auto end = begin;
        for (; end < sources_.size(); ++end) {
          const auto size = tensor_byte_size(cuts_[end][rank].spec);
          if (end > begin && part_bytes + size > max_part_size) break;
          part_bytes += size;
          specs.push_back(cuts_[end][rank].spec);
        }
        auto& part = parts_[rank].emplace_back();
        part.name = rank_file_name(rank, static_cast<int>(parts_[rank].size() - 1));
        part.header = encode_header(specs);
        part.end = end;
        bytes_ += part.header.size() + part_bytes;
        begin = end;
      } while (begin < sources_.size());
    }
  }

  // The index of the streamed `tensor` in file order. Throws unless it is a tensor the headers
  // read before streaming listed, as they listed it.
  std::size_t index_of(const StreamedTensor& tensor) const {
    const TensorSpec full{tensor.info.name, tensor.info.dtype, tensor.info.shape};
    const auto found = index_.find(full.name);
    if (found == index_.end() || sources_[found->second] != full) {
      throw Error(tensor.object + ": tensor " + json_string(full.name) +
                  " is not as the headers read before streaming said (did the checkpoint change?)");
    }
    return found->second;
  }

  const std::vector<TensorSpec>& sources() const { return sources_; }
  const RankTensor& cut(std::size_t tensor, std::size_t rank) const { return cuts_[tensor][rank]; }
  const std::vector<std::vector<Part>>& parts() const { return parts_; }  // [rank][part]
  // Every part's name, rank by rank.
  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& rank : parts_) {
      for (const auto& part : rank) names.push_back(part.name);
    }
    return names;
  }
  // Bytes of all files, headers included.
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::vector<TensorSpec> sources_;
  std::vector<std::vector<RankTensor>> cuts_;  // [tensor][rank]
  std::vector<std::vector<Part>> parts_;       // [rank][part]
  std::unordered_map<std::string, std::size_t> index_;
  std::uint64_t bytes_ = 0;
};

// Writes every rank's part files sequentially, tensor by tensor in file order, each through its
// own ObjectWriter, and commits them all once every tensor is in.
class RankWriters {
 public:
  RankWriters(const ShardLayout& layout, detail::WriteDestination& destination,
              WriteOptions options)
      : layout_(layout), destination_(destination), options_(options),
        current_(layout.parts().size()), open_(layout.parts().size()) {}

  // Opens each rank's first part.
  asio::awaitable<void> open() {
    for (std::size_t rank = 0; rank < current_.size(); ++rank) co_await open_part(rank, 0);
  }

  // Writes every rank's part of tensor `index`, the one after the last tensor written, from
  // `bytes`, the full tensor's.
  asio::awaitable<void> write(std::size_t index, std::span<const std::byte> bytes) {
    const auto& full = layout_.sources()[index];
    for (std::size_t rank = 0; rank < current_.size(); ++rank) {
      while (index >= layout_.parts()[rank][current_[rank]].end) {
        co_await open_part(rank, current_[rank] + 1);
      }
      const auto& cut = layout_.cut(index, rank);
      const auto size = tensor_byte_size(cut.spec);
      for (std::uint64_t done = 0; done < size;) {
        const auto piece = std::min(size - done, copy_buffer_size);
        if (buffer_.size() < piece) buffer_.resize(static_cast<std::size_t>(piece));
        const std::span<std::byte> out(buffer_.data(), static_cast<std::size_t>(piece));
        fill_partition_bytes(full, cut.partition, bytes, done, out);
        co_await open_[rank]->write(out);
        done += piece;
      }
    }
  }

  // Commits every part, rank by rank.
  asio::awaitable<void> commit() {
    for (auto& writer : writers_) co_await writer->commit();
  }

  // Aborts every part not committed yet.
  asio::awaitable<void> abort() {
    std::vector<ObjectWriter*> writers;
    for (auto& writer : writers_) writers.push_back(writer.get());
    co_await detail::abort_after_failure(writers);
  }

 private:
  asio::awaitable<void> open_part(std::size_t rank, std::size_t part) {
    const auto& plan = layout_.parts()[rank][part];
    writers_.push_back(destination_.store->create_writer(destination_.key(plan.name), options_));
    current_[rank] = part;
    open_[rank] = writers_.back().get();
    co_await open_[rank]->write(std::as_bytes(std::span(plan.header)));
  }

  const ShardLayout& layout_;
  detail::WriteDestination& destination_;
  WriteOptions options_;
  std::vector<std::size_t> current_;   // [rank]: the part being written
  std::vector<ObjectWriter*> open_;    // [rank]: its writer
  std::vector<std::unique_ptr<ObjectWriter>> writers_;  // every part opened, in order
  std::vector<std::byte> buffer_;
};

// Refuses a destination that holds rank files already, before anything is read. Listing it is
// also what finds an unreachable destination before the first upload.
asio::awaitable<void> refuse_rank_files(detail::WriteDestination& destination) {
  if (destination.local && !std::filesystem::exists(destination.prefix)) co_return;
  if (!destination.store->can_list()) co_return;
  const auto objects = co_await destination.store->list(destination.prefix, ListDepth::one_level);
  for (const auto& object : objects) {
    const std::string_view name = std::string_view(object.key).substr(destination.prefix.size());
    if (!is_rank_file(name)) continue;
    std::string directory = destination.store->url(destination.prefix);
    directory.pop_back();
    throw InvalidArgument(directory + " already holds rank files (e.g. " +
                          std::string(name) + "); pass --overwrite to replace them");
  }
}

// Streams the source in file order and writes each tensor's rank parts once every tensor before
// it is written: tensors that complete early wait in memory the stream's memory_limit bounds, and
// file order guarantees their predecessors are already being read (see ReadOrder::file_order).
// Adds the source's tensor bytes to `source_bytes`.
asio::awaitable<void> write_ranks(const std::string& source, const StreamerOptions& stream,
                                  const ShardLayout& layout,
                                  detail::WriteDestination& destination,
                                  const ShardOptions& options, ShardProgress& progress,
                                  detail::WaitWatch& waits) {
  const auto names = layout.names();
  const std::function<bool(std::string_view)> ours = is_rank_file;
  if (!options.overwrite) co_await refuse_rank_files(destination);
  co_await detail::refuse_leftovers(destination, ours, names, "shard");
  RankWriters writers(layout, destination, options.write);
  std::exception_ptr error;
  try {
    co_await writers.open();
    RawStreamer streamer(source, stream);
    const auto watching = waits.watch(streamer);
    std::map<std::size_t, StreamedTensor> early;  // by index, until their predecessors are in
    std::size_t next = 0;
    while (auto tensor = co_await streamer.next()) {
      const auto index = layout.index_of(*tensor);
      if (index < next || early.contains(index)) {
        throw Error(tensor->object + ": tensor " + json_string(tensor->info.name) +
                    " came twice (did the checkpoint change?)");
      }
      early.emplace(index, std::move(*tensor));
      for (auto it = early.begin(); it != early.end() && it->first == next; ++next) {
        co_await writers.write(next, it->second.bytes());
        progress.bytes_written += it->second.info.byte_size();
        ++progress.tensors_written;
        if (options.on_progress) options.on_progress(progress);
        it = early.erase(it);
      }
    }
    if (next < layout.sources().size()) {
      throw Error(source + ": the stream ended without tensor " +
                  json_string(layout.sources()[next].name));
    }
    if (destination.local) detail::remove_local_leftovers(destination.prefix, ours, names);
    co_await writers.commit();
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    co_await writers.abort();
    std::rethrow_exception(error);
  }
}

}  // namespace

std::string rank_file_name(int rank, int part) {
  return "model-rank-" + std::to_string(rank) + "-part-" + std::to_string(part) + ".safetensors";
}

ShardReport shard_checkpoint(const std::string& source, const std::string& destination,
                             const ShardOptions& options) {
  check_options(options);
  StreamerOptions stream = options.stream;
  stream.rank = 0;
  stream.tensor_parallel_size = 1;
  stream.read_order = ReadOrder::file_order;

  asio::io_context io;
  auto target =
      detail::open_write_destination(destination, io.get_executor(), stream.store,
                                     rank_file_name(0, 0));
  ShardReport report;
  report.heads = read_head_config(source, stream.store);
  if (options.num_key_value_heads) report.heads.num_key_value_heads = *options.num_key_value_heads;
  const ShardLayout layout(source_tensors(inspect(source, stream)), report.heads,
                           options.tensor_parallel_size, options.max_part_size);
  ShardProgress progress{.tensors = layout.sources().size()};
  for (const auto& tensor : layout.sources()) progress.bytes += tensor_byte_size(tensor);
  if (options.on_progress) options.on_progress(progress);
  detail::WaitWatch waits(io.get_executor());
  const auto watching_destination = waits.watch(*target.store);
  std::function<void(const detail::LongestWait&)> report_wait =
      detail::reporting_into(progress, options.on_progress);
  detail::run_blocking(
      io, detail::with_wait_reports(
              waits, write_ranks(source, stream, layout, target, options, progress, waits),
              std::move(report_wait)));

  report.source_bytes = progress.bytes_written;
  report.tensors = layout.sources().size();
  report.bytes = layout.bytes();
  for (const auto& name : layout.names()) report.files.push_back(target.url(name));
  return report;
}

}  // namespace tensorstream
