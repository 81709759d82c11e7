#pragma once
/// @file
/// How the tensors of a Llama-family checkpoint are cut for tensor parallelism, laid out as vLLM's
/// Llama layers expect them on each rank. One rule per tensor, used by `tensorstream shard` and by
/// anything else that writes or reads rank-partitioned weights.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/model/head_config.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream {

/// Vocabulary rows are padded with zeros up to a multiple of this before they are split, as vLLM's
/// VocabParallelEmbedding pads them.
inline constexpr std::int64_t vocab_padding_multiple = 64;

/// Where a rank's tensor lies in the full tensor: the indices [start, start + length) along `dim`,
/// followed by `padding` zero entries along that dimension, every other dimension whole.
struct TensorSlice {
  std::size_t dim = 0;       ///< The dimension that is cut.
  std::int64_t start = 0;    ///< First index taken from the full tensor along `dim`.
  std::int64_t length = 0;   ///< Indices taken from the full tensor.
  std::int64_t padding = 0;  ///< Zero entries appended after them.

  bool operator==(const TensorSlice&) const = default;
};

/// One rank's part of a tensor. Its dtype is the full tensor's.
struct TensorPartition {
  std::vector<std::int64_t> shape;   ///< The rank's shape.
  std::optional<TensorSlice> slice;  ///< How the rank's part is cut; nullopt: the whole tensor.

  bool operator==(const TensorPartition&) const = default;
};

/// Rank `rank`'s part of `tensor` (its name, dtype and full shape) when a model whose attention
/// heads are `heads` is split over `tp_size` ranks. The rule is chosen by the module the name ends
/// in (`model.layers.0.self_attn.q_proj.weight` → `q_proj`):
/// - `q_proj`, `k_proj`, `v_proj`, `gate_proj`, `up_proj` (weight and bias): split evenly on
///   dim 0, whole heads per rank for the attention projections;
/// - `o_proj`, `down_proj` weight: split evenly on dim 1 (their bias is added once the ranks'
///   outputs are summed, so it is replicated);
/// - `embed_tokens`, `lm_head` weight: the vocabulary (dim 0) padded up to a multiple of
///   vocab_padding_multiple, then split evenly, the rows past the vocabulary being zeros, so that
///   every rank has the same shape;
/// - `k_proj`, `v_proj` with fewer key-value heads than ranks: not split but replicated, each rank
///   holding the one head rank / (tp_size / num_key_value_heads), as vLLM does;
/// - anything else (norms, other 1-D tensors, names it does not know): the whole tensor.
///
/// Throws InvalidArgument naming the tensor, the dimension and tp_size when a dimension or its
/// heads do not divide into tp_size ranks (or, for replicated key-value heads, tp_size is not a
/// multiple of them), when a split tensor has an unexpected rank, when the attention rows do not
/// match `heads`, and for a rank outside [0, tp_size).
TENSORSTREAM_API
TensorPartition partition_tensor(const TensorSpec& tensor, const HeadConfig& heads, int tp_size,
                                 int rank);

/// Whether partition_tensor() has a rule of its own for the tensor named `name` (a projection,
/// embedding or head it splits) rather than keeping it whole because it does not know it.
TENSORSTREAM_API
bool has_partition_rule(std::string_view name);

/// Fills `destination` with the bytes of the rank's tensor described by `partition`, starting at
/// byte `offset` of that tensor, from `source`, all the bytes of the full `tensor`: the contract
/// of TensorFiller, so that a writer can ask for a partition in pieces of its buffer's size.
/// Throws InvalidArgument when `source` is not the size of `tensor` or the range lies outside the
/// rank's tensor.
TENSORSTREAM_API
void fill_partition_bytes(const TensorSpec& tensor, const TensorPartition& partition,
                          std::span<const std::byte> source, std::uint64_t offset,
                          std::span<std::byte> destination);

}  // namespace tensorstream
