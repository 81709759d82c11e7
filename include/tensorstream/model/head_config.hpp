#pragma once
/// @file
/// The attention-head layout of a transformer, as tensor-parallel partitioning needs it.

#include <cstdint>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// How a model's attention projections are made of heads.
struct HeadConfig {
  std::int64_t num_attention_heads = 0;  ///< Query heads: q_proj rows / head_dim.
  std::int64_t num_key_value_heads = 0;  ///< Key and value heads: k_proj rows / head_dim.
  std::int64_t head_dim = 0;             ///< Width of one head.
};

/// The head layout a Hugging Face `config.json` describes: `num_attention_heads`,
/// `num_key_value_heads` (num_attention_heads when absent, as in transformers) and `head_dim`
/// (hidden_size / num_attention_heads when absent). `where` names the file in messages. Throws
/// InvalidArgument naming it for invalid JSON, a missing or non-positive field, or a hidden_size
/// that is not a multiple of num_attention_heads.
TENSORSTREAM_API
HeadConfig parse_head_config(std::string_view config_json, std::string_view where);

}  // namespace tensorstream
