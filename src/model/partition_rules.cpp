#include "tensorstream/model/partition_rules.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <string_view>

#include "base/json_string.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

enum class Rule { whole, split_dim0, split_dim1, query, output, key_value, vocab };

// The rule of a tensor and the number of dimensions that rule expects of it.
struct RuleMatch {
  Rule rule = Rule::whole;
  std::size_t dims = 0;
};

// `model.layers.0.mlp.up_proj.weight` → module "up_proj", parameter "weight".
RuleMatch match_rule(std::string_view name) {
  const auto last_dot = name.rfind('.');
  if (last_dot == std::string_view::npos || last_dot == 0) return {};
  const auto parameter = name.substr(last_dot + 1);
  const auto module_dot = name.rfind('.', last_dot - 1);
  const auto module_start = module_dot == std::string_view::npos ? 0 : module_dot + 1;
  const auto module = name.substr(module_start, last_dot - module_start);
  if (parameter == "weight" || parameter == "bias") {
    const std::size_t dims = parameter == "weight" ? 2 : 1;
    if (module == "q_proj") return {Rule::query, dims};
    if (module == "k_proj" || module == "v_proj") return {Rule::key_value, dims};
    if (module == "gate_proj" || module == "up_proj") return {Rule::split_dim0, dims};
  }
  if (parameter == "weight") {
    if (module == "o_proj") return {Rule::output, 2};
    if (module == "down_proj") return {Rule::split_dim1, 2};
    if (module == "embed_tokens" || module == "lm_head") return {Rule::vocab, 2};
  }
  return {};
}

class TensorPartitioner {
 public:
  TensorPartitioner(const TensorSpec& tensor, const HeadConfig& heads, int tp_size, int rank)
      : tensor_(tensor), heads_(heads), tp_size_(tp_size), rank_(rank) {}

  TensorPartition partition() const {
    const auto match = match_rule(tensor_.name);
    if (match.rule == Rule::whole) return {tensor_.shape, std::nullopt};
    expect_dims(match.dims);
    switch (match.rule) {
      case Rule::split_dim0: return split(0);
      case Rule::split_dim1: return split(1);
      case Rule::query: return split_heads(0, heads_.num_attention_heads, "attention");
      case Rule::output: return split_heads(1, heads_.num_attention_heads, "attention");
      case Rule::key_value: return key_value();
      case Rule::vocab: return vocab();
      case Rule::whole: break;
    }
    return {tensor_.shape, std::nullopt};
  }

 private:
  InvalidArgument error(const std::string& detail) const {
    return InvalidArgument("tensor " + json_string(tensor_.name) + ": " + detail);
  }

  void expect_dims(std::size_t dims) const {
    if (tensor_.shape.size() != dims) {
      throw error("has " + std::to_string(tensor_.shape.size()) + " dimensions, expected " +
                  std::to_string(dims) + " to split it over " + std::to_string(tp_size_) +
                  " ranks");
    }
  }

  // Dim `dim` must hold `count` heads of head_dim: a checkpoint that disagrees with the head
  // layout would otherwise be cut through the middle of a head.
  void expect_heads(std::size_t dim, std::int64_t count, std::string_view kind) const {
    if (heads_.num_attention_heads <= 0 || heads_.num_key_value_heads <= 0 ||
        heads_.head_dim <= 0) {
      throw error(
          "splitting it needs the model's head layout (num_attention_heads, "
          "num_key_value_heads, head_dim), which is not set");
    }
    const auto size = tensor_.shape[dim];
    if (size != count * heads_.head_dim) {
      throw error("dim " + std::to_string(dim) + " of size " + std::to_string(size) + " is not " +
                  std::to_string(count) + " " + std::string(kind) + " heads of size " +
                  std::to_string(heads_.head_dim));
    }
  }

  // `count` things along a dimension (its size, or the heads it holds) must split evenly;
  // `what` names them for the message.
  void expect_divisible(std::int64_t count, const std::string& what) const {
    if (count % tp_size_ != 0) {
      throw error(what + " cannot be split evenly over " + std::to_string(tp_size_) + " ranks");
    }
  }

  std::string heads_of(std::size_t dim, std::int64_t count, std::string_view kind) const {
    return "the " + std::to_string(count) + " " + std::string(kind) + " heads of dim " +
           std::to_string(dim);
  }

  TensorPartition split(std::size_t dim) const {
    const auto size = tensor_.shape[dim];
    expect_divisible(size, "dim " + std::to_string(dim) + " of size " + std::to_string(size));
    const auto part = size / tp_size_;
    return cut(dim, part * rank_, part, 0);
  }

  TensorPartition split_heads(std::size_t dim, std::int64_t count, std::string_view kind) const {
    expect_heads(dim, count, kind);
    expect_divisible(count, heads_of(dim, count, kind));
    return split(dim);
  }

  TensorPartition key_value() const {
    const auto kv_heads = heads_.num_key_value_heads;
    if (kv_heads >= tp_size_) return split_heads(0, kv_heads, "key-value");
    expect_heads(0, kv_heads, "key-value");
    if (tp_size_ % kv_heads != 0) {
      throw error(heads_of(0, kv_heads, "key-value") + " cannot be replicated evenly over " +
                  std::to_string(tp_size_) + " ranks (the rank count must be a multiple of them)");
    }
    const auto head = rank_ / (tp_size_ / kv_heads);
    return cut(0, head * heads_.head_dim, heads_.head_dim, 0);
  }

  TensorPartition vocab() const {
    const auto rows = tensor_.shape[0];
    const auto padded =
        (rows + vocab_padding_multiple - 1) / vocab_padding_multiple * vocab_padding_multiple;
    expect_divisible(padded, "dim 0 of size " + std::to_string(rows) + ", padded to " +
                                 std::to_string(padded) + ",");
    const auto part = padded / tp_size_;
    const auto start = std::min(part * rank_, rows);
    const auto length = std::min(part, rows - start);
    return cut(0, start, length, part - length);
  }

  TensorPartition cut(std::size_t dim, std::int64_t start, std::int64_t length,
                      std::int64_t padding) const {
    TensorPartition partition{tensor_.shape, TensorSlice{dim, start, length, padding}};
    partition.shape[dim] = length + padding;
    return partition;
  }

  const TensorSpec& tensor_;
  const HeadConfig& heads_;
  int tp_size_;
  int rank_;
};

std::uint64_t product(std::span<const std::int64_t> dims) {
  std::uint64_t result = 1;
  for (const auto dim : dims) result *= static_cast<std::uint64_t>(dim);
  return result;
}

}  // namespace

bool has_partition_rule(std::string_view name) { return match_rule(name).rule != Rule::whole; }

TensorPartition partition_tensor(const TensorSpec& tensor, const HeadConfig& heads, int tp_size,
                                 int rank) {
  if (tp_size < 1) {
    throw InvalidArgument("tensor-parallel size must be at least 1, got " +
                          std::to_string(tp_size));
  }
  if (rank < 0 || rank >= tp_size) {
    throw InvalidArgument("rank " + std::to_string(rank) + " is outside [0, " +
                          std::to_string(tp_size) + ")");
  }
  return TensorPartitioner(tensor, heads, tp_size, rank).partition();
}

void fill_partition_bytes(const TensorSpec& tensor, const TensorPartition& partition,
                          std::span<const std::byte> source, std::uint64_t offset,
                          std::span<std::byte> destination) {
  const auto full_size = tensor_byte_size(tensor);
  if (source.size() != full_size) {
    throw InvalidArgument("tensor " + json_string(tensor.name) + ": " +
                          std::to_string(source.size()) + " source bytes, expected " +
                          std::to_string(full_size));
  }
  const auto part_size = tensor_byte_size({tensor.name, tensor.dtype, partition.shape});
  if (offset > part_size || destination.size() > part_size - offset) {
    throw InvalidArgument("tensor " + json_string(tensor.name) + ": bytes [" +
                          std::to_string(offset) + ", " +
                          std::to_string(offset + destination.size()) +
                          ") lie outside the rank's " + std::to_string(part_size) + " bytes");
  }
  if (!partition.slice) {
    std::memcpy(destination.data(), source.data() + offset, destination.size());
    return;
  }
  // The rank's tensor is a run of blocks, one per index of the dimensions before the cut: each is
  // `length` rows of the source's block at `start`, then `padding` rows of zeros.
  const auto& slice = *partition.slice;
  const std::span<const std::int64_t> shape(tensor.shape);
  const auto row = element_size(tensor.dtype) * product(shape.subspan(slice.dim + 1));
  const auto source_block = row * static_cast<std::uint64_t>(shape[slice.dim]);
  const auto taken = row * static_cast<std::uint64_t>(slice.length);
  const auto block = taken + row * static_cast<std::uint64_t>(slice.padding);
  const auto skipped = row * static_cast<std::uint64_t>(slice.start);
  for (auto position = offset; !destination.empty();) {
    const auto index = position / block;
    const auto within = position % block;
    std::size_t piece = 0;
    if (within < taken) {
      piece = static_cast<std::size_t>(std::min<std::uint64_t>(taken - within, destination.size()));
      std::memcpy(destination.data(), source.data() + index * source_block + skipped + within,
                  piece);
    } else {
      piece = static_cast<std::size_t>(std::min<std::uint64_t>(block - within, destination.size()));
      std::memset(destination.data(), 0, piece);
    }
    destination = destination.subspan(piece);
    position += piece;
  }
}

}  // namespace tensorstream
