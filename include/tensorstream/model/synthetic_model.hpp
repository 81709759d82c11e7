#pragma once
/// @file
/// Synthetic Llama-shaped BF16 checkpoints with deterministic content, written fast and with
/// bounded memory: the input of `tensorstream gen-model`, the tests and the benchmarks.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace tensorstream {

/// The dimensions of a Llama model that decide its tensors' shapes.
struct LlamaConfig {
  std::int64_t hidden_size = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t vocab_size = 0;
  std::int64_t max_position_embeddings = 0;

  /// Width of one attention head: hidden_size / num_heads.
  std::int64_t head_dim() const { return hidden_size / num_heads; }
};

/// The configuration of a gen-model preset: "tiny" (hidden 256, 2 layers, 8 heads, 4 kv heads,
/// vocab 1024; a few MB) or "llama-7b-4layers" (Llama-2-7B's dimensions with 4 layers; about
/// 2.1 GB). Throws InvalidArgument naming the preset and the valid ones otherwise.
TENSORSTREAM_API
LlamaConfig synthetic_preset(std::string_view preset);

/// The BF16 tensors of a Llama checkpoint, in the order they are written: embed_tokens, each
/// layer's attention (q, k, v, o), MLP (gate, up, down) and norms, the final norm, lm_head.
TENSORSTREAM_API
std::vector<TensorSpec> llama_tensors(const LlamaConfig& config);

/// Fills `destination` with the synthetic content of tensor `name` from byte `offset` of that
/// tensor. The content depends only on the name and the position, so any range can be recomputed
/// without the file; read as BF16 it is finite values of magnitude in [2^-7, 2) with random signs.
TENSORSTREAM_API
void fill_synthetic_bytes(std::string_view name, std::uint64_t offset,
                          std::span<std::byte> destination);

/// The `length` synthetic bytes of tensor `name` starting at byte `offset` of that tensor: what a
/// reader of a generated checkpoint must get for that range.
TENSORSTREAM_API
std::vector<std::byte> synthetic_bytes(std::string_view name, std::uint64_t offset,
                                       std::uint64_t length);

/// What generate_synthetic_model writes.
struct SyntheticModelOptions {
  std::string preset = "tiny";  ///< See synthetic_preset().
  int shards = 1;               ///< Number of .safetensors files, 1 to the number of tensors.
  bool index = false;           ///< Also write model.safetensors.index.json.
  StoreOptions store{};         ///< How the destination's store is opened.
};

/// What generate_synthetic_model wrote.
struct SyntheticModel {
  /// Every file written, the shards among them: paths for a local destination, else URLs.
  std::vector<std::string> files;
  std::vector<std::string> shards;  ///< The .safetensors files, in tensor order.
  std::size_t tensors = 0;          ///< Tensors over all shards.
  std::uint64_t tensor_bytes = 0;   ///< Their bytes (the index's total_size).
};

/// Writes a synthetic checkpoint into `destination`, a local directory (created if missing) or the
/// URL of a directory or prefix of any store that can write (file://, s3://, ...): config.json,
/// generation_config.json, a small stand-in tokenizer.json, the shards (`model.safetensors`, or
/// `model-00001-of-0000N.safetensors`... with the tensors split in order into shards of about equal
/// bytes) and, with `index`, `model.safetensors.index.json`. Each file is streamed through its
/// store's ObjectWriter with a 16 MiB buffer, and appears complete or not at all.
///
/// Shards and an index left in a local directory by an earlier generation are removed first, so
/// the directory always holds one consistent model. Stores cannot delete objects, so a bucket
/// prefix holding such a file that this generation would not replace is refused with
/// InvalidArgument before anything is written.
///
/// Throws InvalidArgument for an unknown preset, a shard count out of range, or a destination whose
/// store cannot write; StorageError naming the file that could not be written.
TENSORSTREAM_API
SyntheticModel generate_synthetic_model(const std::string& destination,
                                        const SyntheticModelOptions& options = {});

}  // namespace tensorstream
