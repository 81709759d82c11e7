#pragma once
// What vLLM's tensor-parallel Llama layers hold on each rank, written out independently of the
// partition rules under test: the oracle of `partition`, `shard` and the store server.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream::testing {

namespace fs = std::filesystem;

// A rank's part of a tensor: `length` indices of dimension `dim` from `start`, then `padding`
// zero entries.
struct Cut {
  std::size_t dim = 0;
  std::int64_t start = 0;
  std::int64_t length = 0;
  std::int64_t padding = 0;
};

// How vLLM's Llama layers cut tensor `name` of shape `shape` for rank `rank` of `tp`, written out
// here independently of the rules under test; nullopt for a replicated tensor.
inline std::optional<Cut> vllm_cut(const std::string& name, const std::vector<std::int64_t>& shape,
                            const LlamaConfig& config, int tp, int rank) {
  const auto is = [&](const char* module) { return name.ends_with(std::string(module) + ".weight"); };
  const auto even = [&](std::size_t dim) {
    const auto part = shape[dim] / tp;
    return Cut{dim, rank * part, part, 0};
  };
  if (is("embed_tokens") || is("lm_head")) {
    const auto padded = (shape[0] + 63) / 64 * 64;
    const auto part = padded / tp;
    const auto start = std::min<std::int64_t>(rank * part, shape[0]);
    const auto length = std::clamp<std::int64_t>(shape[0] - start, 0, part);
    return Cut{0, start, length, part - length};
  }
  if ((is("k_proj") || is("v_proj")) && config.num_kv_heads < tp) {
    // Each rank holds the one key-value head its query heads attend with.
    const auto head = rank * config.num_kv_heads / tp;
    return Cut{0, head * config.head_dim(), config.head_dim(), 0};
  }
  if (is("q_proj") || is("k_proj") || is("v_proj") || is("gate_proj") || is("up_proj")) {
    return even(0);
  }
  if (is("o_proj") || is("down_proj")) return even(1);
  return std::nullopt;
}

// The bytes of `cut` of a tensor of `shape` with 2-byte elements whose bytes are `full`.
inline std::vector<std::byte> cut_bytes(const std::vector<std::byte>& full,
                                 const std::vector<std::int64_t>& shape, const Cut& cut) {
  std::uint64_t outer = 1;
  for (std::size_t i = 0; i < cut.dim; ++i) outer *= static_cast<std::uint64_t>(shape[i]);
  std::uint64_t row = 2;
  for (std::size_t i = cut.dim + 1; i < shape.size(); ++i) {
    row *= static_cast<std::uint64_t>(shape[i]);
  }
  const auto block = row * static_cast<std::uint64_t>(shape[cut.dim]);
  std::vector<std::byte> bytes;
  for (std::uint64_t b = 0; b < outer; ++b) {
    const auto* begin = full.data() + b * block + static_cast<std::uint64_t>(cut.start) * row;
    bytes.insert(bytes.end(), begin, begin + static_cast<std::uint64_t>(cut.length) * row);
    bytes.resize(bytes.size() + static_cast<std::uint64_t>(cut.padding) * row, std::byte{0});
  }
  return bytes;
}

inline std::vector<std::int64_t> cut_shape(std::vector<std::int64_t> shape, const Cut& cut) {
  shape[cut.dim] = cut.length + cut.padding;
  return shape;
}

// A Llama checkpoint of `config` with synthetic content, and its config.json.
inline void write_model(const fs::path& dir, const LlamaConfig& config) {
  fs::create_directories(dir);
  const auto tensors = llama_tensors(config);
  write_safetensors(dir / "model.safetensors", tensors,
                    [](const TensorSpec& tensor, std::uint64_t offset, std::span<std::byte> out) {
                      fill_synthetic_bytes(tensor.name, offset, out);
                    });
  std::ofstream(dir / "config.json")
      << "{\"model_type\":\"llama\",\"hidden_size\":" << config.hidden_size
      << ",\"intermediate_size\":" << config.intermediate_size
      << ",\"num_attention_heads\":" << config.num_heads
      << ",\"num_key_value_heads\":" << config.num_kv_heads
      << ",\"num_hidden_layers\":" << config.num_layers
      << ",\"vocab_size\":" << config.vocab_size << "}";
  std::ofstream(dir / "tokenizer.json") << "{\"version\":\"1.0\"}";
}

// Grouped-query attention with 2 key-value heads (replicated from TP 4 on), a vocabulary that is
// not a multiple of 64 (so the last ranks get zero rows), and an embedding over 5 MiB (so that
// with 5 MiB parts it goes up as a multipart upload).
inline LlamaConfig gqa_config() {
  return {.hidden_size = 256, .intermediate_size = 512, .num_layers = 1, .num_heads = 8,
          .num_kv_heads = 2, .vocab_size = 12000, .max_position_embeddings = 2048};
}

}  // namespace tensorstream::testing
