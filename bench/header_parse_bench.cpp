// Parsing and validating safetensors headers: a single-file Llama-70B-like checkpoint (80 layers,
// 723 tensors) and the header of a small shard. Reports headers/s (items) and header bytes/s.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/header.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream {
namespace {

// Llama-2-70B's dimensions; the layer count is the benchmark's argument.
LlamaConfig llama_70b_like(std::int64_t layers) {
  return {.hidden_size = 8192,
          .intermediate_size = 28672,
          .num_layers = layers,
          .num_heads = 64,
          .num_kv_heads = 8,
          .vocab_size = 32000,
          .max_position_embeddings = 4096};
}

void BM_ParseHeader(benchmark::State& state) {
  const auto tensors = llama_tensors(llama_70b_like(state.range(0)));
  const auto encoded = encode_header(tensors);
  std::uint64_t data_size = 0;
  for (const auto& tensor : tensors) data_size += tensor_byte_size(tensor);
  const auto json = std::string_view(encoded).substr(8);
  const auto object_size = encoded.size() + data_size;

  for (auto _ : state) {
    auto header = parse_header(json, object_size, "bench.safetensors");
    benchmark::DoNotOptimize(header);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(json.size()));
  state.counters["tensors"] = static_cast<double>(tensors.size());
  state.counters["header_bytes"] = static_cast<double>(json.size());
}
BENCHMARK(BM_ParseHeader)->Arg(80)->Arg(2)->ArgName("layers");

}  // namespace
}  // namespace tensorstream

BENCHMARK_MAIN();
