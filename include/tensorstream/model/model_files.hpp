#pragma once
/// @file
/// The files a model directory holds besides its weights.

#include <array>
#include <string_view>

namespace tensorstream {

/// The files a model directory holds besides its weights, by the conventions of Hugging Face
/// repositories: what prefetch() asks for by name from a store that cannot list (http(s)://).
inline constexpr std::array<std::string_view, 13> known_artifact_names = {
    "config.json",          "generation_config.json", "tokenizer.json",
    "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
    "vocab.json",           "merges.txt",             "vocab.txt",
    "added_tokens.json",    "chat_template.json",     "preprocessor_config.json",
    "model.safetensors.index.json"};

}  // namespace tensorstream
