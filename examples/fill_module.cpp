// Filling a libtorch module's parameters as tensors arrive with load_into_module: each streamed
// tensor is copied into its parameter and released at once, so peak memory is the module plus the
// streaming budget, not two copies of the model.
//
//   example_fill_module [URL]   (default: a synthetic tiny Llama checkpoint; URL must hold one
//                                of that shape)

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>

#include "tensorstream/model/load_into_module.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/safetensors_streamer.hpp"

namespace {

using tensorstream::LlamaConfig;

// A module with just a `weight`, named like Llama's RMSNorm.
struct Norm : torch::nn::Module {
  explicit Norm(std::int64_t size) { weight = register_parameter("weight", torch::ones({size})); }
  torch::Tensor weight;
};

torch::nn::Linear linear(std::int64_t in, std::int64_t out) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
}

struct Attention : torch::nn::Module {
  explicit Attention(const LlamaConfig& c) {
    const auto kv = c.num_kv_heads * c.head_dim();
    register_module("q_proj", linear(c.hidden_size, c.hidden_size));
    register_module("k_proj", linear(c.hidden_size, kv));
    register_module("v_proj", linear(c.hidden_size, kv));
    register_module("o_proj", linear(c.hidden_size, c.hidden_size));
  }
};

struct Mlp : torch::nn::Module {
  explicit Mlp(const LlamaConfig& c) {
    register_module("gate_proj", linear(c.hidden_size, c.intermediate_size));
    register_module("up_proj", linear(c.hidden_size, c.intermediate_size));
    register_module("down_proj", linear(c.intermediate_size, c.hidden_size));
  }
};

struct Layer : torch::nn::Module {
  explicit Layer(const LlamaConfig& c) {
    register_module("self_attn", std::make_shared<Attention>(c));
    register_module("mlp", std::make_shared<Mlp>(c));
    register_module("input_layernorm", std::make_shared<Norm>(c.hidden_size));
    register_module("post_attention_layernorm", std::make_shared<Norm>(c.hidden_size));
  }
};

struct Decoder : torch::nn::Module {
  explicit Decoder(const LlamaConfig& c) {
    register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
    torch::nn::ModuleList layers;
    for (std::int64_t i = 0; i < c.num_layers; ++i) layers->push_back(std::make_shared<Layer>(c));
    register_module("layers", layers);
    register_module("norm", std::make_shared<Norm>(c.hidden_size));
  }
};

struct Llama : torch::nn::Module {
  explicit Llama(const LlamaConfig& c) {
    register_module("model", std::make_shared<Decoder>(c));
    register_module("lm_head", linear(c.hidden_size, c.vocab_size));
  }
};

}  // namespace

int main(int argc, char** argv) try {
  const auto config = tensorstream::synthetic_preset("tiny");
  std::string url;
  if (argc > 1) {
    url = argv[1];
  } else {
    // A directory per example: examples run side by side must not write each other's model.
    const auto dir =
        std::filesystem::temp_directory_path() / "tensorstream-example-fill-module";
    tensorstream::generate_synthetic_model(dir, {.preset = "tiny", .shards = 2});
    url = dir.string() + "/";
  }

  Llama model(config);
  model.to(torch::kBFloat16);
  tensorstream::SafeTensorsStreamer streamer(url);
  // Throws if a tensor has no parameter, does not fit it, or a parameter is never streamed.
  const auto report = tensorstream::load_into_module_blocking(streamer, model);
  std::printf("filled %zu parameters (%.1f MiB); peak streaming memory %.1f MiB\n", report.tensors,
              static_cast<double>(report.bytes) / (1 << 20),
              static_cast<double>(streamer.stats().peak_memory) / (1 << 20));
  return 0;
} catch (const std::exception& error) {
  std::fprintf(stderr, "example_fill_module: error: %s\n", error.what());
  return 1;
}
