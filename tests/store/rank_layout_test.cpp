#include "tensorstream/store/rank_layout.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tensorstream/error.hpp"

namespace tensorstream::store {
namespace {

// A two-layer GQA model (8 query heads, 2 key-value heads, head_dim 4, hidden 32,
// intermediate 64, vocabulary 128) with q/k/v biases, as Qwen2 has.
constexpr std::string_view gqa_config =
    R"({"num_hidden_layers":2,"num_attention_heads":8,"num_key_value_heads":2,"hidden_size":32})";

// The tensors rank r of `tp` stores (every rank has the same shapes).
std::vector<TensorSpec> gqa_rank_tensors(std::int64_t tp) {
  const std::int64_t kv_rows = std::max<std::int64_t>(2 / tp, 1) * 4;
  std::vector<TensorSpec> tensors{{"model.embed_tokens.weight", Dtype::BF16, {128 / tp, 32}}};
  for (int layer = 0; layer < 2; ++layer) {
    const auto p = "model.layers." + std::to_string(layer) + ".";
    tensors.push_back({p + "input_layernorm.weight", Dtype::BF16, {32}});
    tensors.push_back({p + "self_attn.q_proj.weight", Dtype::BF16, {32 / tp, 32}});
    tensors.push_back({p + "self_attn.q_proj.bias", Dtype::BF16, {32 / tp}});
    tensors.push_back({p + "self_attn.k_proj.weight", Dtype::BF16, {kv_rows, 32}});
    tensors.push_back({p + "self_attn.k_proj.bias", Dtype::BF16, {kv_rows}});
    tensors.push_back({p + "self_attn.v_proj.weight", Dtype::BF16, {kv_rows, 32}});
    tensors.push_back({p + "self_attn.v_proj.bias", Dtype::BF16, {kv_rows}});
    tensors.push_back({p + "self_attn.o_proj.weight", Dtype::BF16, {32, 32 / tp}});
    tensors.push_back({p + "mlp.gate_proj.weight", Dtype::BF16, {64 / tp, 32}});
    tensors.push_back({p + "mlp.up_proj.weight", Dtype::BF16, {64 / tp, 32}});
    tensors.push_back({p + "mlp.down_proj.weight", Dtype::BF16, {32, 64 / tp}});
  }
  return tensors;
}

const TensorEntry& entry(const RankLayout& layout, std::string_view name) {
  for (const auto& tensor : layout.manifest.tensors) {
    if (tensor.name == name) return tensor;
  }
  throw std::runtime_error("no tensor " + std::string(name));
}

// Whether the manifest lists a tensor `name`.
bool serves(const RankLayout& layout, std::string_view name) {
  return std::any_of(layout.manifest.tensors.begin(), layout.manifest.tensors.end(),
                     [&](const TensorEntry& tensor) { return tensor.name == name; });
}

std::string message_of(std::span<const TensorSpec> tensors, std::string_view config,
                       const KvCacheOptions& kv_cache, int rank = 0, int tp = 2) {
  try {
    plan_rank_layout(tensors, config, rank, tp, true, kv_cache);
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "no error";
}

// Every stored tensor has one placement, of its own size, and no two placements share a byte;
// every manifest tensor is aligned and inside its region.
void expect_consistent(const RankLayout& layout, std::span<const TensorSpec> tensors) {
  ASSERT_EQ(layout.placements.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(layout.placements[i].name, tensors[i].name);
    EXPECT_EQ(layout.placements[i].bytes, tensor_byte_size(tensors[i]));
    EXPECT_EQ(layout.find(tensors[i].name), &layout.placements[i]);
    for (std::size_t j = i + 1; j < tensors.size(); ++j) {
      const auto& a = layout.placements[i];
      const auto& b = layout.placements[j];
      EXPECT_TRUE(a.offset + a.bytes <= b.offset || b.offset + b.bytes <= a.offset)
          << a.name << " overlaps " << b.name;
    }
  }
  for (const auto& tensor : layout.manifest.tensors) {
    EXPECT_EQ(tensor.offset % tensor_alignment, 0U) << tensor.name;
    const auto region = std::find_if(
        layout.manifest.regions.begin(), layout.manifest.regions.end(),
        [&](const RegionInfo& info) { return info.name == tensor.region; });
    ASSERT_NE(region, layout.manifest.regions.end()) << tensor.name;
    EXPECT_LE(tensor.offset + tensor.bytes, region->bytes) << tensor.name;
  }
}

TEST(RankLayout, FusesQkvAndGateUpAtTensorParallelTwo) {
  const auto tensors = gqa_rank_tensors(2);
  const auto layout = plan_rank_layout(tensors, gqa_config, 1, 2, true, {});

  EXPECT_EQ(layout.manifest.rank, 1);
  EXPECT_EQ(layout.manifest.tensor_parallel_size, 2);
  EXPECT_TRUE(layout.manifest.fused);
  EXPECT_EQ(layout.manifest.config_json, gqa_config);
  EXPECT_FALSE(layout.manifest.kv_cache);
  EXPECT_EQ(layout.manifest.regions,
            (std::vector<RegionInfo>{{"weights", 22528, false, 0}}));

  std::vector<TensorEntry> expected{
      {"model.embed_tokens.weight", Dtype::BF16, {64, 32}, "weights", 0, 4096}};
  for (std::uint64_t layer = 0; layer < 2; ++layer) {
    const auto p = "model.layers." + std::to_string(layer) + ".";
    const std::uint64_t base = 4096 + layer * 9216;
    expected.push_back({p + "input_layernorm.weight", Dtype::BF16, {32}, "weights", base, 64});
    expected.push_back(
        {p + "self_attn.qkv_proj.weight", Dtype::BF16, {24, 32}, "weights", base + 256, 1536});
    expected.push_back(
        {p + "self_attn.qkv_proj.bias", Dtype::BF16, {24}, "weights", base + 1792, 48});
    expected.push_back(
        {p + "self_attn.o_proj.weight", Dtype::BF16, {32, 16}, "weights", base + 2048, 1024});
    expected.push_back(
        {p + "mlp.gate_up_proj.weight", Dtype::BF16, {64, 32}, "weights", base + 3072, 4096});
    expected.push_back(
        {p + "mlp.down_proj.weight", Dtype::BF16, {32, 32}, "weights", base + 7168, 2048});
  }
  EXPECT_EQ(layout.manifest.tensors, expected);

  // The parts lie back to back inside their fused tensor: q rows, then k, then v.
  const auto at = [&](const std::string& name) { return *layout.find(name); };
  EXPECT_EQ(at("model.layers.1.self_attn.q_proj.weight"),
            (Placement{"model.layers.1.self_attn.q_proj.weight", 13568, 1024}));
  EXPECT_EQ(at("model.layers.1.self_attn.k_proj.weight"),
            (Placement{"model.layers.1.self_attn.k_proj.weight", 14592, 256}));
  EXPECT_EQ(at("model.layers.1.self_attn.v_proj.weight"),
            (Placement{"model.layers.1.self_attn.v_proj.weight", 14848, 256}));
  EXPECT_EQ(at("model.layers.1.self_attn.q_proj.bias"),
            (Placement{"model.layers.1.self_attn.q_proj.bias", 14848 + 256, 32}));
  EXPECT_EQ(at("model.layers.1.self_attn.k_proj.bias"),
            (Placement{"model.layers.1.self_attn.k_proj.bias", 15136, 8}));
  EXPECT_EQ(at("model.layers.1.self_attn.v_proj.bias"),
            (Placement{"model.layers.1.self_attn.v_proj.bias", 15144, 8}));
  EXPECT_EQ(at("model.layers.1.mlp.gate_proj.weight"),
            (Placement{"model.layers.1.mlp.gate_proj.weight", 16384, 2048}));
  EXPECT_EQ(at("model.layers.1.mlp.up_proj.weight"),
            (Placement{"model.layers.1.mlp.up_proj.weight", 18432, 2048}));
  EXPECT_EQ(layout.find("model.layers.1.self_attn.qkv_proj.weight"), nullptr);
  expect_consistent(layout, tensors);
}

TEST(RankLayout, FusedShapesAtTensorParallelOneAndFour) {
  const auto one_tensors = gqa_rank_tensors(1);
  const auto one = plan_rank_layout(one_tensors, gqa_config, 0, 1, true, {});
  EXPECT_EQ(entry(one, "model.layers.0.self_attn.qkv_proj.weight").shape,
            (std::vector<std::int64_t>{48, 32}));
  EXPECT_EQ(entry(one, "model.layers.1.self_attn.qkv_proj.bias").shape,
            (std::vector<std::int64_t>{48}));
  EXPECT_EQ(entry(one, "model.layers.0.mlp.gate_up_proj.weight").shape,
            (std::vector<std::int64_t>{128, 32}));
  EXPECT_EQ(one.find("model.layers.0.self_attn.v_proj.weight")->offset,
            entry(one, "model.layers.0.self_attn.qkv_proj.weight").offset + 40 * 32 * 2);
  expect_consistent(one, one_tensors);

  // At TP 4 each rank holds one replicated key-value head: 2 query heads, 1 k head, 1 v head.
  const auto four_tensors = gqa_rank_tensors(4);
  const auto four = plan_rank_layout(four_tensors, gqa_config, 3, 4, true, {});
  EXPECT_EQ(entry(four, "model.layers.1.self_attn.qkv_proj.weight").shape,
            (std::vector<std::int64_t>{16, 32}));
  EXPECT_EQ(entry(four, "model.layers.1.self_attn.qkv_proj.bias").shape,
            (std::vector<std::int64_t>{16}));
  EXPECT_EQ(entry(four, "model.layers.1.mlp.gate_up_proj.weight").shape,
            (std::vector<std::int64_t>{32, 32}));
  const auto qkv = entry(four, "model.layers.1.self_attn.qkv_proj.weight").offset;
  EXPECT_EQ(four.find("model.layers.1.self_attn.k_proj.weight")->offset, qkv + 8 * 32 * 2);
  EXPECT_EQ(four.find("model.layers.1.self_attn.v_proj.weight")->offset, qkv + 12 * 32 * 2);
  expect_consistent(four, four_tensors);
}

TEST(RankLayout, LayerWithoutValueProjectionIsNotFused) {
  auto tensors = gqa_rank_tensors(2);
  std::erase_if(tensors, [](const TensorSpec& tensor) {
    return tensor.name == "model.layers.1.self_attn.v_proj.weight";
  });
  const auto layout = plan_rank_layout(tensors, gqa_config, 0, 2, true, {});
  EXPECT_TRUE(serves(layout, "model.layers.0.self_attn.qkv_proj.weight"));
  EXPECT_FALSE(serves(layout, "model.layers.1.self_attn.qkv_proj.weight"));
  EXPECT_TRUE(serves(layout, "model.layers.1.self_attn.q_proj.weight"));
  EXPECT_TRUE(serves(layout, "model.layers.1.self_attn.k_proj.weight"));
  // The biases are all there, so they are still fused.
  EXPECT_TRUE(serves(layout, "model.layers.1.self_attn.qkv_proj.bias"));
  expect_consistent(layout, tensors);
}

TEST(RankLayout, PartsOfDifferentDtypeOrWidthAreNotFused) {
  auto tensors = gqa_rank_tensors(2);
  for (auto& tensor : tensors) {
    if (tensor.name == "model.layers.0.mlp.up_proj.weight") tensor.dtype = Dtype::F16;
    if (tensor.name == "model.layers.1.self_attn.k_proj.weight") tensor.shape = {4, 16};
  }
  const auto layout = plan_rank_layout(tensors, gqa_config, 0, 2, true, {});
  EXPECT_FALSE(serves(layout, "model.layers.0.mlp.gate_up_proj.weight"));
  EXPECT_TRUE(serves(layout, "model.layers.1.mlp.gate_up_proj.weight"));
  EXPECT_FALSE(serves(layout, "model.layers.1.self_attn.qkv_proj.weight"));
  EXPECT_TRUE(serves(layout, "model.layers.0.self_attn.qkv_proj.weight"));
  expect_consistent(layout, tensors);
}

TEST(RankLayout, WithoutFusionKeepsStoredNamesInOrder) {
  const auto tensors = gqa_rank_tensors(2);
  const auto layout = plan_rank_layout(tensors, gqa_config, 0, 2, false, {});
  EXPECT_FALSE(layout.manifest.fused);
  ASSERT_EQ(layout.manifest.tensors.size(), tensors.size());
  std::uint64_t end = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& tensor = layout.manifest.tensors[i];
    EXPECT_EQ(tensor.name, tensors[i].name);
    EXPECT_EQ(tensor.shape, tensors[i].shape);
    // Each tensor at the first aligned offset after the previous one.
    EXPECT_EQ(tensor.offset, (end + 255) / 256 * 256) << tensor.name;
    EXPECT_EQ(layout.placements[i].offset, tensor.offset);
    end = tensor.offset + tensor.bytes;
  }
  EXPECT_EQ(layout.manifest.regions[0].bytes, end);
  expect_consistent(layout, tensors);
}

TEST(RankLayout, OffsetsAreAlignedAfterOddSizes) {
  const std::vector<TensorSpec> tensors{{"a", Dtype::U8, {3}},
                                        {"b", Dtype::F32, {7, 9}},
                                        {"c", Dtype::BOOL, {}},
                                        {"d", Dtype::BF16, {0, 5}},
                                        {"e", Dtype::F64, {1}}};
  const auto layout = plan_rank_layout(tensors, "{}", 0, 1, true, {});
  EXPECT_EQ(layout.placements, (std::vector<Placement>{{"a", 0, 3},
                                                       {"b", 256, 252},
                                                       {"c", 512, 1},
                                                       {"d", 768, 0},
                                                       {"e", 768, 8}}));
  EXPECT_EQ(layout.manifest.regions, (std::vector<RegionInfo>{{"weights", 776, false, 0}}));
}

TEST(RankLayout, KvCacheFromNumberOfBlocks) {
  const auto tensors = gqa_rank_tensors(2);
  KvCacheOptions options;
  options.num_blocks = 10;
  const auto layout = plan_rank_layout(tensors, gqa_config, 0, 2, true, options);
  EXPECT_EQ(layout.manifest.kv_cache, (KvCacheInfo{2, 10, 16, 1, 4, Dtype::BF16}));
  EXPECT_EQ(layout.manifest.regions, (std::vector<RegionInfo>{{"weights", 22528, false, 0},
                                                              {"kv_cache", 5120, true, 1}}));
  const std::vector<std::int64_t> shape{10, 16, 1, 4};
  const std::vector<TensorEntry> kv(layout.manifest.tensors.end() - 4,
                                    layout.manifest.tensors.end());
  EXPECT_EQ(kv, (std::vector<TensorEntry>{
                    {"model.layers.0.self_attn.kv_cache.key", Dtype::BF16, shape, "kv_cache", 0,
                     1280},
                    {"model.layers.0.self_attn.kv_cache.value", Dtype::BF16, shape, "kv_cache",
                     1280, 1280},
                    {"model.layers.1.self_attn.kv_cache.key", Dtype::BF16, shape, "kv_cache",
                     2560, 1280},
                    {"model.layers.1.self_attn.kv_cache.value", Dtype::BF16, shape, "kv_cache",
                     3840, 1280},
                }));
  EXPECT_EQ(layout.manifest.tensors.size(), 13U + 4U);
  expect_consistent(layout, tensors);
}

TEST(RankLayout, KvCacheFromMemory) {
  const auto tensors = gqa_rank_tensors(2);
  KvCacheOptions options;
  // One block of K and V over both layers: 2 × 2 layers × 16 × 1 head × 4 × 2 bytes = 512.
  options.memory = 5000;
  const auto layout = plan_rank_layout(tensors, gqa_config, 1, 2, true, options);
  EXPECT_EQ(layout.manifest.kv_cache, (KvCacheInfo{2, 9, 16, 1, 4, Dtype::BF16}));
  // 9 blocks of 128 bytes per tensor; each tensor starts aligned.
  const auto& last = layout.manifest.tensors.back();
  EXPECT_EQ(last.name, "model.layers.1.self_attn.kv_cache.value");
  EXPECT_EQ(last.offset, 3840U);
  EXPECT_EQ(last.bytes, 1152U);
  EXPECT_EQ(layout.manifest.regions.at(1), (RegionInfo{"kv_cache", 4992, true, 1}));

  options.memory = 512;
  options.block_size = 8;
  const auto small = plan_rank_layout(tensors, gqa_config, 1, 2, true, options);
  EXPECT_EQ(small.manifest.kv_cache, (KvCacheInfo{2, 2, 8, 1, 4, Dtype::BF16}));
}

TEST(RankLayout, KvHeadsPerRank) {
  const auto tensors = gqa_rank_tensors(1);
  KvCacheOptions options;
  options.num_blocks = 1;
  const auto kv_heads = [&](std::string_view config, int tp) {
    return plan_rank_layout(tensors, config, 0, tp, true, options).manifest.kv_cache->kv_heads;
  };
  EXPECT_EQ(kv_heads(gqa_config, 1), 2);
  EXPECT_EQ(kv_heads(gqa_config, 2), 1);
  EXPECT_EQ(kv_heads(gqa_config, 4), 1);
  EXPECT_EQ(kv_heads(gqa_config, 8), 1);
  // Without num_key_value_heads every head has its own key and value (multi-head attention).
  EXPECT_EQ(kv_heads(R"({"num_hidden_layers":1,"num_attention_heads":8,"hidden_size":32})", 2), 4);
  EXPECT_EQ(message_of(tensors,
                       R"({"num_hidden_layers":1,"num_attention_heads":12,)"
                       R"("num_key_value_heads":3,"hidden_size":48})",
                       options, 0, 2),
            "config.json: num_key_value_heads 3 cannot be shared among tensor-parallel size 2");
  EXPECT_EQ(message_of(tensors,
                       R"({"num_hidden_layers":1,"num_attention_heads":8,)"
                       R"("num_key_value_heads":2,"hidden_size":32})",
                       options, 0, 3),
            "config.json: num_key_value_heads 2 cannot be shared among tensor-parallel size 3");
}

TEST(RankLayout, HeadDimFromConfig) {
  const auto tensors = gqa_rank_tensors(1);
  KvCacheOptions options;
  options.num_blocks = 3;
  const auto layout = plan_rank_layout(
      tensors,
      R"({"num_hidden_layers":1,"num_attention_heads":8,"num_key_value_heads":2,"head_dim":128,)"
      R"("hidden_size":32})",
      0, 1, true, options);
  EXPECT_EQ(layout.manifest.kv_cache, (KvCacheInfo{1, 3, 16, 2, 128, Dtype::BF16}));
  EXPECT_EQ(layout.manifest.tensors.back().shape, (std::vector<std::int64_t>{3, 16, 2, 128}));
  EXPECT_EQ(layout.manifest.tensors.back().bytes, 3U * 16 * 2 * 128 * 2);
}

TEST(RankLayout, KvCacheDtype) {
  auto tensors = gqa_rank_tensors(2);
  tensors[0].dtype = Dtype::F32;  // the embedding comes first
  KvCacheOptions options;
  options.num_blocks = 1;
  EXPECT_EQ(plan_rank_layout(tensors, gqa_config, 0, 2, true, options).manifest.kv_cache->dtype,
            Dtype::BF16);

  std::erase_if(tensors, [](const TensorSpec& tensor) {
    return tensor.name.ends_with("q_proj.weight");
  });
  const auto without_q = plan_rank_layout(tensors, gqa_config, 0, 2, true, options);
  EXPECT_EQ(without_q.manifest.kv_cache->dtype, Dtype::F32);
  EXPECT_EQ(without_q.manifest.tensors.back().bytes, 16U * 4 * 4);

  options.dtype = Dtype::F16;
  EXPECT_EQ(plan_rank_layout(tensors, gqa_config, 0, 2, true, options).manifest.kv_cache->dtype,
            Dtype::F16);

  options.dtype.reset();
  EXPECT_EQ(message_of({}, gqa_config, options),
            "--kv-dtype is needed: the rank has no tensors to take it from");
}

TEST(RankLayout, OptionErrors) {
  const auto tensors = gqa_rank_tensors(2);
  KvCacheOptions both;
  both.num_blocks = 4;
  both.memory = 1 << 20;
  EXPECT_EQ(message_of(tensors, gqa_config, both),
            "--kv-cache-blocks and --kv-cache-memory cannot both be given");

  KvCacheOptions no_blocks;
  no_blocks.num_blocks = 0;
  EXPECT_EQ(message_of(tensors, gqa_config, no_blocks), "--kv-cache-blocks must be at least 1, got 0");

  KvCacheOptions small;
  small.memory = 511;
  EXPECT_EQ(message_of(tensors, gqa_config, small),
            "--kv-cache-memory 511 is less than one KV cache block: 512 bytes (K and V of 2 "
            "layers × block size 16 × 1 KV heads × head dim 4 × 2 bytes of BF16)");

  KvCacheOptions block_size;
  block_size.block_size = 0;
  EXPECT_EQ(message_of(tensors, gqa_config, block_size), "--block-size must be at least 1, got 0");

  EXPECT_EQ(message_of(tensors, gqa_config, {}, 2, 2), "rank 2 is outside tensor-parallel size 2");
  EXPECT_EQ(message_of(tensors, gqa_config, {}, -1, 2),
            "rank -1 is outside tensor-parallel size 2");
  EXPECT_EQ(message_of(tensors, gqa_config, {}, 0, 0), "tensor-parallel size must be at least 1, got 0");
}

TEST(RankLayout, ConfigErrors) {
  const auto tensors = gqa_rank_tensors(2);
  KvCacheOptions options;
  options.num_blocks = 1;
  EXPECT_EQ(message_of(tensors, R"({"num_attention_heads":8,"hidden_size":32})", options),
            R"(config.json: "num_hidden_layers" is missing)");
  EXPECT_EQ(message_of(tensors, R"({"num_hidden_layers":2,"hidden_size":32})", options),
            R"(config.json: "num_attention_heads" is missing)");
  EXPECT_EQ(message_of(tensors, R"({"num_hidden_layers":2,"num_attention_heads":8})", options),
            R"(config.json: "hidden_size" is missing)");
  EXPECT_EQ(message_of(tensors,
                       R"({"num_hidden_layers":0,"num_attention_heads":8,"hidden_size":32})",
                       options),
            R"(config.json: "num_hidden_layers" must be positive, got 0)");
  EXPECT_EQ(message_of(tensors,
                       R"({"num_hidden_layers":"2","num_attention_heads":8,"hidden_size":32})",
                       options),
            R"(config.json: "num_hidden_layers" is not an integer)");
  EXPECT_EQ(message_of(tensors, "{", options).rfind("config.json: invalid JSON: ", 0), 0U);
  // Without a KV cache the config is not read.
  EXPECT_NO_THROW(plan_rank_layout(tensors, "{}", 0, 2, true, {}));
}

TEST(RankLayout, NameErrors) {
  auto tensors = gqa_rank_tensors(2);
  tensors.push_back(tensors[2]);
  EXPECT_EQ(message_of(tensors, gqa_config, {}),
            "tensor model.layers.0.self_attn.q_proj.weight is listed twice");

  tensors = gqa_rank_tensors(2);
  tensors.push_back({"model.layers.0.mlp.gate_up_proj.weight", Dtype::BF16, {64, 32}});
  EXPECT_EQ(message_of(tensors, gqa_config, {}),
            "tensor model.layers.0.mlp.gate_up_proj.weight is stored and would also be fused "
            "from its parts");
}

}  // namespace
}  // namespace tensorstream::store
