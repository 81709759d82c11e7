#include "tensorstream/model/shard_checkpoint.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include "storage/output_file.hpp"
#include "safetensors/json_string.hpp"
#include "streaming/discovery.hpp"
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

// A Hugging Face config.json is a few KB; anything far larger is not one.
constexpr std::uint64_t max_config_size = 16ull << 20;

// The head layout of config.json next to the checkpoint: under the prefix, or in the directory of
// the file.
HeadConfig read_head_config(const std::string& source, const StoreOptions& options) {
  const Url url = detail::resolve_url(source);
  const std::string key = url.path.substr(0, url.path.rfind('/') + 1) + "config.json";
  asio::io_context io;
  auto store = open_store(url, io.get_executor(), options);
  std::string text;
  std::exception_ptr error;
  // The store may keep work of its own pending, so the run ends when the file is in rather than
  // when the context runs out of work.
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        const auto size = co_await store->size(key);
        if (size > max_config_size) {
          throw InvalidArgument(store->url(key) + ": " + std::to_string(size) +
                                " bytes is too large for a model config");
        }
        text.resize(size);
        co_await store->read_range(key, 0, std::as_writable_bytes(std::span(text)));
      },
      [&](std::exception_ptr failure) {
        error = failure;
        io.stop();
      });
  io.run();
  if (error) std::rethrow_exception(error);
  return parse_head_config(text, store->url(key));
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

// The tensors a stream of the source yields, in file order.
std::vector<TensorSpec> source_tensors(const std::vector<FileHeader>& files) {
  std::vector<TensorSpec> tensors;
  for (const auto& file : files) {
    for (const auto& info : file.header.tensors) {
      tensors.push_back({info.name, info.dtype, info.shape});
    }
  }
  return tensors;
}

bool is_rank_file(const std::string& name) {
  return name.starts_with("model-rank-") && name.find("-part-") != std::string::npos &&
         name.ends_with(".safetensors");
}

// Where one rank's part of a tensor goes.
struct Placement {
  std::size_t file = 0;      // index into the output files
  std::uint64_t offset = 0;  // of its first byte in that file
  TensorSpec spec;           // the rank's tensor
  TensorPartition partition;
};

// The rank files being written and where every tensor's parts go in them.
class ShardWriter {
 public:
  // Cuts every tensor for every rank, which throws before anything is written if one cannot be.
  ShardWriter(const std::vector<TensorSpec>& tensors, const HeadConfig& heads, int ranks)
      : sources_(tensors), placements_(tensors.size()), written_(tensors.size(), false),
        ranks_(ranks) {
    for (std::size_t i = 0; i < tensors.size(); ++i) {
      index_.emplace(tensors[i].name, i);
      for (int rank = 0; rank < ranks; ++rank) {
        auto partition = partition_tensor(tensors[i], heads, ranks, rank);
        TensorSpec spec{tensors[i].name, tensors[i].dtype, partition.shape};
        placements_[i].push_back({0, 0, std::move(spec), std::move(partition)});
      }
    }
  }

  // Creates the files in `directory` and writes their headers. Each rank's tensors are split, in
  // order, into parts of at most max_part_size bytes; a rank without tensors gets one empty part.
  void open(const std::filesystem::path& directory, std::uint64_t max_part_size) {
    for (std::size_t rank = 0; rank < static_cast<std::size_t>(ranks_); ++rank) {
      const auto first_file = files_.size();
      std::size_t begin = 0;
      do {
        std::vector<TensorSpec> specs;
        std::uint64_t part_bytes = 0;
        auto end = begin;
        for (; end < placements_.size(); ++end) {
          const auto size = tensor_byte_size(placements_[end][rank].spec);
          if (end > begin && part_bytes + size > max_part_size) break;
          part_bytes += size;
          specs.push_back(placements_[end][rank].spec);
        }
        const auto header = encode_header(specs);
        const auto part = static_cast<int>(files_.size() - first_file);
        auto& file = files_.emplace_back(directory / rank_file_name(static_cast<int>(rank), part));
        file.write_at(0, std::as_bytes(std::span(header)));
        std::uint64_t offset = header.size();
        for (auto i = begin; i < end; ++i) {
          placements_[i][rank].file = files_.size() - 1;
          placements_[i][rank].offset = offset;
          offset += tensor_byte_size(placements_[i][rank].spec);
        }
        bytes_ += offset;
        begin = end;
      } while (begin < placements_.size());
    }
  }

  // Writes every rank's part of `tensor`.
  void write(const StreamedTensor& tensor) {
    const TensorSpec full{tensor.info.name, tensor.info.dtype, tensor.info.shape};
    const auto found = index_.find(full.name);
    if (found == index_.end() || written_[found->second] || sources_[found->second] != full) {
      throw Error(tensor.object + ": tensor " + json_string(full.name) +
                  " is not as the headers read before streaming said (did the checkpoint change?)");
    }
    for (const auto& placement : placements_[found->second]) {
      const auto size = tensor_byte_size(placement.spec);
      for (std::uint64_t done = 0; done < size;) {
        const auto piece = std::min(size - done, copy_buffer_size);
        if (buffer_.size() < piece) buffer_.resize(static_cast<std::size_t>(piece));
        const std::span<std::byte> destination(buffer_.data(), static_cast<std::size_t>(piece));
        fill_partition_bytes(full, placement.partition, tensor.bytes(), done, destination);
        files_[placement.file].write_at(placement.offset + done, destination);
        done += piece;
      }
    }
    written_[found->second] = true;
  }

  // Throws unless every tensor was written.
  void check_complete(const std::string& source) const {
    for (const auto& [name, i] : index_) {
      if (!written_[i]) {
        throw Error(source + ": the stream ended without tensor " + json_string(name));
      }
    }
  }

  // Renames every file into place, after removing rank files of an earlier run from `directory`.
  void commit(const std::filesystem::path& directory) {
    std::unordered_set<std::string> ours;
    for (const auto& file : files_) ours.insert(file.path().filename().string());
    std::error_code ec;
    for (std::filesystem::directory_iterator it(directory, ec), end; !ec && it != end;
         it.increment(ec)) {
      const auto name = it->path().filename().string();
      if (!is_rank_file(name) || ours.contains(name)) continue;
      std::error_code remove_ec;
      if (!std::filesystem::remove(it->path(), remove_ec) && remove_ec) {
        throw StorageError(it->path().string(), "cannot remove: " + remove_ec.message());
      }
    }
    if (ec) throw StorageError(directory.string(), "cannot list directory: " + ec.message());
    for (auto& file : files_) file.commit();
  }

  const std::vector<detail::OutputFile>& files() const { return files_; }
  // Bytes of all files, headers included.
  std::uint64_t bytes() const { return bytes_; }

 private:
  std::vector<TensorSpec> sources_;
  std::vector<std::vector<Placement>> placements_;  // [tensor][rank]
  std::unordered_map<std::string, std::size_t> index_;
  std::vector<bool> written_;
  int ranks_;
  std::vector<detail::OutputFile> files_;
  std::uint64_t bytes_ = 0;
  std::vector<std::byte> buffer_;
};

}  // namespace

std::string rank_file_name(int rank, int part) {
  return "model-rank-" + std::to_string(rank) + "-part-" + std::to_string(part) + ".safetensors";
}

ShardReport shard_checkpoint(const std::string& source, const std::filesystem::path& destination,
                             const ShardOptions& options) {
  check_options(options);
  StreamerOptions stream = options.stream;
  stream.rank = 0;
  stream.tensor_parallel_size = 1;

  ShardReport report;
  report.heads = read_head_config(source, stream.store);
  if (options.num_key_value_heads) report.heads.num_key_value_heads = *options.num_key_value_heads;
  const auto tensors = source_tensors(inspect(source, stream));
  ShardWriter writer(tensors, report.heads, options.tensor_parallel_size);
  std::error_code ec;
  std::filesystem::create_directories(destination, ec);
  if (ec) throw StorageError(destination.string(), "cannot create directory: " + ec.message());
  writer.open(destination, options.max_part_size);

  RawStreamer streamer(source, stream);
  while (auto tensor = streamer.next_blocking()) {
    writer.write(*tensor);
    report.source_bytes += tensor->info.byte_size();
  }
  writer.check_complete(source);
  writer.commit(destination);

  report.tensors = tensors.size();
  report.bytes = writer.bytes();
  for (const auto& file : writer.files()) report.files.push_back(file.path());
  return report;
}

}  // namespace tensorstream
