#pragma once
/// @file
/// Where a tensor-parallel rank's tensors lie in the store server's shared regions: the weights
/// (with q/k/v and gate/up fused as vLLM holds them) and, optionally, a zero-filled paged KV cache.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/dtype.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/store/manifest.hpp"

namespace tensorstream::store {

/// How big the KV cache is; with neither num_blocks nor memory, no KV cache is served.
struct KvCacheOptions {
  std::optional<std::int64_t> num_blocks;  ///< --kv-cache-blocks
  /// --kv-cache-memory: bytes of K and V of every layer; num_blocks = floor(memory / bytes of one
  /// block of K and V over all layers). Alignment padding between tensors is not counted.
  std::optional<std::uint64_t> memory;
  std::int64_t block_size = 16;  ///< --block-size
  /// --kv-dtype; default: the dtype of the first q_proj weight, else of the first tensor.
  std::optional<Dtype> dtype;
};

/// Where one stored tensor of the rank lands in the weights region.
struct Placement {
  /// The tensor as stored (TRAW object / source tensor name), e.g. "...q_proj.weight".
  std::string name;
  /// Its first byte in the weights region (inside a fused tensor when fused).
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;

  bool operator==(const Placement&) const = default;
};

/// A rank's regions and where every tensor lies in them.
struct TENSORSTREAM_API RankLayout {
  /// version, rank, tensor_parallel_size, fused, config_json, regions (weights fd_index 0;
  /// kv_cache fd_index 1 when served), kv_cache, tensors (weights region by offset, then the KV
  /// cache tensors); `model` and `device` are left to the caller.
  Manifest manifest;
  /// One per stored tensor, in the order given.
  std::vector<Placement> placements;

  /// The placement of the stored tensor `name`, or nullptr.
  const Placement* find(std::string_view name) const;
};

/// Lays out rank `rank` of `tensor_parallel_size` whose stored tensors are `rank_tensors` (each
/// with the RANK's shape, as partition_tensor() gives or a TRAW tree holds), for the model whose
/// config.json is `config_json`.
///
/// Weights lie in the order given, each at the next multiple of tensor_alignment. With `fuse`,
/// for every layer prefix P = "model.layers.{i}.", the parts of P+"self_attn.qkv_proj.weight"
/// (rows of q_proj, then k_proj, then v_proj), P+"self_attn.qkv_proj.bias" (the same for the
/// biases) and P+"mlp.gate_up_proj.weight" (rows of gate_proj, then up_proj) are placed back to
/// back as one tensor where the first of them comes, when all parts exist with the same dtype and
/// the same trailing dimensions; otherwise the parts are served as stored.
///
/// The KV cache (when `kv_cache` asks for one) holds, for every layer l, key then value tensors
/// "model.layers.{l}.self_attn.kv_cache.key" / ".value" of shape
/// [num_blocks, block_size, kv_heads, head_dim], with kv_heads = num_key_value_heads / tp, or 1
/// when num_key_value_heads < tp divides tp (each rank holds one replicated head). Its sizes come
/// from config_json's num_hidden_layers, num_attention_heads, num_key_value_heads and head_dim
/// (or hidden_size).
///
/// Throws InvalidArgument naming the option or field: a rank outside [0, tensor_parallel_size),
/// duplicate names, a fused name that is also stored, --kv-cache-blocks together with
/// --kv-cache-memory, --kv-cache-blocks or --block-size below 1, --kv-cache-memory smaller than
/// one block, a missing or invalid config field, num_key_value_heads that cannot be shared among
/// the ranks, or sizes that overflow.
TENSORSTREAM_API
RankLayout plan_rank_layout(std::span<const TensorSpec> rank_tensors, std::string_view config_json,
                            int rank, int tensor_parallel_size, bool fuse,
                            const KvCacheOptions& kv_cache);

}  // namespace tensorstream::store
