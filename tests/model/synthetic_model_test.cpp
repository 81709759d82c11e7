#include "tensorstream/model/synthetic_model.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <vector>

#include "safetensors/test_files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/safetensors/header.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;

std::string invalid_argument(const fs::path& dir, const SyntheticModelOptions& options) {
  try {
    generate_synthetic_model(dir, options);
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(typeid(e), typeid(InvalidArgument));
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return {};
}

std::vector<std::string> names_of(const std::vector<TensorSpec>& tensors) {
  std::vector<std::string> names;
  for (const auto& tensor : tensors) names.push_back(tensor.name);
  return names;
}

std::vector<std::string> directory_listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// (tensor name, file name) pairs of the index's weight_map, in the order written. The generator
// writes one `"name": "file"` entry per line; names in the tiny model need no escaping.
std::vector<std::pair<std::string, std::string>> weight_map_of(const std::string& index) {
  std::istringstream lines(index.substr(index.find("\"weight_map\"")));
  std::vector<std::pair<std::string, std::string>> entries;
  for (std::string line; std::getline(lines, line);) {
    const auto separator = line.find("\": \"");
    if (separator == std::string::npos) continue;
    const auto name_start = line.find('"') + 1;
    const auto file_start = separator + 4;
    entries.emplace_back(line.substr(name_start, separator - name_start),
                         line.substr(file_start, line.find('"', file_start) - file_start));
  }
  return entries;
}

TEST(SyntheticPreset, TinyHasTheDocumentedDimensions) {
  const auto c = synthetic_preset("tiny");
  EXPECT_EQ(c.hidden_size, 256);
  EXPECT_EQ(c.intermediate_size, 688);
  EXPECT_EQ(c.num_layers, 2);
  EXPECT_EQ(c.num_heads, 8);
  EXPECT_EQ(c.num_kv_heads, 4);
  EXPECT_EQ(c.vocab_size, 1024);
  EXPECT_EQ(c.head_dim(), 32);
}

TEST(SyntheticPreset, Llama7bHasLlama2Dimensions) {
  const auto c = synthetic_preset("llama-7b-4layers");
  EXPECT_EQ(c.hidden_size, 4096);
  EXPECT_EQ(c.intermediate_size, 11008);
  EXPECT_EQ(c.num_layers, 4);
  EXPECT_EQ(c.num_heads, 32);
  EXPECT_EQ(c.num_kv_heads, 32);
  EXPECT_EQ(c.vocab_size, 32000);
  const auto tensors = llama_tensors(c);
  EXPECT_EQ(tensors.size(), 39u);
  std::uint64_t bytes = 0;
  for (const auto& tensor : tensors) bytes += tensor_byte_size(tensor);
  EXPECT_EQ(bytes, 2143363072u);
}

TEST(SyntheticPreset, RejectsUnknownPresets) {
  try {
    synthetic_preset("llama-70b");
    FAIL() << "no InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown model preset \"llama-70b\" (use tiny or llama-7b-4layers)");
  }
}

TEST(LlamaTensors, NamesAndShapesFollowTheLlamaLayout) {
  const auto tensors = llama_tensors(synthetic_preset("tiny"));
  std::vector<std::string> expected{"model.embed_tokens.weight"};
  for (int layer = 0; layer < 2; ++layer) {
    const auto p = "model.layers." + std::to_string(layer) + ".";
    for (const auto* suffix :
         {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
          "self_attn.o_proj.weight", "mlp.gate_proj.weight", "mlp.up_proj.weight",
          "mlp.down_proj.weight", "input_layernorm.weight", "post_attention_layernorm.weight"}) {
      expected.push_back(p + suffix);
    }
  }
  expected.push_back("model.norm.weight");
  expected.push_back("lm_head.weight");
  EXPECT_EQ(names_of(tensors), expected);

  std::map<std::string, std::vector<std::int64_t>> shapes;
  for (const auto& tensor : tensors) {
    EXPECT_EQ(tensor.dtype, Dtype::BF16) << tensor.name;
    shapes[tensor.name] = tensor.shape;
  }
  using Shape = std::vector<std::int64_t>;
  EXPECT_EQ(shapes["model.embed_tokens.weight"], (Shape{1024, 256}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.q_proj.weight"], (Shape{256, 256}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.k_proj.weight"], (Shape{128, 256}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.v_proj.weight"], (Shape{128, 256}));
  EXPECT_EQ(shapes["model.layers.1.self_attn.o_proj.weight"], (Shape{256, 256}));
  EXPECT_EQ(shapes["model.layers.0.mlp.gate_proj.weight"], (Shape{688, 256}));
  EXPECT_EQ(shapes["model.layers.0.mlp.up_proj.weight"], (Shape{688, 256}));
  EXPECT_EQ(shapes["model.layers.0.mlp.down_proj.weight"], (Shape{256, 688}));
  EXPECT_EQ(shapes["model.layers.0.input_layernorm.weight"], (Shape{256}));
  EXPECT_EQ(shapes["model.layers.0.post_attention_layernorm.weight"], (Shape{256}));
  EXPECT_EQ(shapes["model.norm.weight"], (Shape{256}));
  EXPECT_EQ(shapes["lm_head.weight"], (Shape{1024, 256}));
}

TEST(SyntheticBytes, AreDeterministicAndDependOnTheName) {
  const auto a = synthetic_bytes("model.norm.weight", 0, 4096);
  EXPECT_EQ(a, synthetic_bytes("model.norm.weight", 0, 4096));
  EXPECT_NE(a, synthetic_bytes("lm_head.weight", 0, 4096));
}

TEST(SyntheticBytes, AnyRangeMatchesTheWholeTensor) {
  const auto whole = synthetic_bytes("w", 0, 100);
  for (std::uint64_t offset = 0; offset < 20; ++offset) {
    for (std::uint64_t length : {0, 1, 3, 7, 8, 9, 17, 64}) {
      const auto part = synthetic_bytes("w", offset, length);
      EXPECT_TRUE(std::equal(part.begin(), part.end(), whole.begin() + offset,
                             whole.begin() + offset + length))
          << offset << "+" << length;
    }
  }
}

TEST(SyntheticBytes, AreFiniteBf16ValuesOfModestMagnitude) {
  const auto bytes = synthetic_bytes("model.layers.0.mlp.up_proj.weight", 0, 1 << 16);
  std::set<int> signs;
  for (std::size_t i = 0; i < bytes.size(); i += 2) {
    const auto value = static_cast<std::uint16_t>(std::to_integer<unsigned>(bytes[i]) |
                                                   std::to_integer<unsigned>(bytes[i + 1]) << 8);
    const auto exponent = (value >> 7) & 0xff;
    ASSERT_GE(exponent, 120u) << i;
    ASSERT_LE(exponent, 127u) << i;
    signs.insert(value >> 15);
  }
  EXPECT_EQ(signs.size(), 2u);
}

TEST(GenerateSyntheticModel, WritesTheTinyModelAsOneFile) {
  testing::TempDir dir;
  const auto model = generate_synthetic_model(dir.path() / "tiny");
  const auto root = dir.path() / "tiny";
  EXPECT_EQ(directory_listing(root),
            (std::vector<std::string>{"config.json", "generation_config.json", "model.safetensors",
                                      "tokenizer.json"}));
  EXPECT_EQ(model.files,
            (std::vector<std::string>{root / "config.json", root / "generation_config.json",
                                      root / "tokenizer.json", root / "model.safetensors"}));
  EXPECT_EQ(model.shards, std::vector<std::string>{root / "model.safetensors"});
  EXPECT_EQ(model.tensors, 21u);

  const auto expected = llama_tensors(synthetic_preset("tiny"));
  const auto file = read_file(root / "model.safetensors");
  const auto header = read_header(file, "model.safetensors");
  EXPECT_EQ(header.metadata, (std::map<std::string, std::string>{{"format", "pt"}}));
  ASSERT_EQ(header.tensors.size(), expected.size());
  std::uint64_t bytes = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& info = header.tensors[i];
    EXPECT_EQ((TensorSpec{info.name, info.dtype, info.shape}), expected[i]);
    const auto content = synthetic_bytes(info.name, 0, info.byte_size());
    EXPECT_EQ(std::memcmp(file.data() + header.data_start + info.begin, content.data(),
                          content.size()),
              0)
        << info.name;
    bytes += info.byte_size();
  }
  EXPECT_EQ(model.tensor_bytes, bytes);
  EXPECT_EQ(file.size(), header.data_start + bytes);
  EXPECT_GT(bytes, 3u << 20);
  EXPECT_LT(bytes, 5u << 20);
}

TEST(GenerateSyntheticModel, WritesLlamaConfig) {
  testing::TempDir dir;
  generate_synthetic_model(dir.path());
  const auto config = read_file(dir.path() / "config.json");
  for (const auto* field :
       {R"("architectures": ["LlamaForCausalLM"])", R"("model_type": "llama")",
        R"("hidden_size": 256,)", R"("intermediate_size": 688,)", R"("num_hidden_layers": 2,)",
        R"("num_attention_heads": 8,)", R"("num_key_value_heads": 4,)", R"("vocab_size": 1024,)",
        R"("torch_dtype": "bfloat16")"}) {
    EXPECT_NE(config.find(field), std::string::npos) << field;
  }
  EXPECT_NE(read_file(dir.path() / "tokenizer.json").find(R"("type": "WordLevel")"),
            std::string::npos);
  EXPECT_NE(read_file(dir.path() / "generation_config.json").find(R"("eos_token_id": 2)"),
            std::string::npos);
}

TEST(GenerateSyntheticModel, SplitsShardsEvenlyInOrderAndIndexesEveryTensorOnce) {
  testing::TempDir dir;
  const auto model = generate_synthetic_model(dir.path(), {.shards = 3, .index = true});
  EXPECT_EQ(directory_listing(dir.path()),
            (std::vector<std::string>{"config.json", "generation_config.json",
                                      "model-00001-of-00003.safetensors",
                                      "model-00002-of-00003.safetensors",
                                      "model-00003-of-00003.safetensors",
                                      "model.safetensors.index.json", "tokenizer.json"}));
  ASSERT_EQ(model.shards.size(), 3u);
  EXPECT_EQ(model.files.back(), (dir.path() / "model.safetensors.index.json").string());

  const auto expected = llama_tensors(synthetic_preset("tiny"));
  std::uint64_t largest = 0;
  for (const auto& tensor : expected) largest = std::max(largest, tensor_byte_size(tensor));

  std::vector<std::string> streamed;
  std::map<std::string, std::string> file_of;
  for (const auto& shard : model.shards) {
    const auto file = read_file(shard);
    const auto header = read_header(file, shard);
    EXPECT_FALSE(header.tensors.empty()) << shard;
    std::uint64_t bytes = 0;
    for (const auto& info : header.tensors) {
      streamed.push_back(info.name);
      file_of[info.name] = fs::path(shard).filename();
      bytes += info.byte_size();
      const auto tail = synthetic_bytes(info.name, info.byte_size() / 2, info.byte_size() / 2);
      EXPECT_EQ(std::memcmp(file.data() + header.data_start + info.begin + info.byte_size() / 2,
                            tail.data(), tail.size()),
                0)
          << info.name;
    }
    // Even by bytes: no shard is off its share by more than the largest tensor.
    const auto share = model.tensor_bytes / 3;
    EXPECT_LE(bytes, share + largest) << shard;
    EXPECT_GE(bytes + largest, share) << shard;
  }
  EXPECT_EQ(streamed, names_of(expected));

  const auto index = read_file(dir.path() / "model.safetensors.index.json");
  EXPECT_NE(index.find("\"total_size\": " + std::to_string(model.tensor_bytes)), std::string::npos);
  const auto weight_map = weight_map_of(index);
  EXPECT_EQ(weight_map.size(), expected.size());
  std::set<std::string> seen;
  for (const auto& [name, file] : weight_map) {
    EXPECT_TRUE(seen.insert(name).second) << name << " listed twice";
    EXPECT_EQ(file, file_of[name]) << name;
  }
  EXPECT_TRUE(std::is_sorted(weight_map.begin(), weight_map.end()));
}

TEST(GenerateSyntheticModel, GivesEveryShardATensorEvenWhenOneTensorDominates) {
  testing::TempDir dir;
  // 21 tensors into 20 shards: most shards hold one tiny norm or projection.
  const auto model = generate_synthetic_model(dir.path(), {.shards = 20});
  ASSERT_EQ(model.shards.size(), 20u);
  std::size_t tensors = 0;
  for (const auto& shard : model.shards) {
    const auto header = read_header(read_file(shard), shard);
    EXPECT_FALSE(header.tensors.empty()) << shard;
    tensors += header.tensors.size();
  }
  EXPECT_EQ(tensors, 21u);
  EXPECT_EQ(fs::path(model.shards.back()).filename(), "model-00020-of-00020.safetensors");
}

TEST(GenerateSyntheticModel, RemovesShardsOfAnEarlierGeneration) {
  testing::TempDir dir;
  generate_synthetic_model(dir.path(), {.shards = 4, .index = true});
  std::ofstream(dir.path() / "notes.txt") << "kept";
  generate_synthetic_model(dir.path(), {.shards = 1});
  EXPECT_EQ(directory_listing(dir.path()),
            (std::vector<std::string>{"config.json", "generation_config.json", "model.safetensors",
                                      "notes.txt", "tokenizer.json"}));
}

TEST(GenerateSyntheticModel, RejectsUnknownPreset) {
  testing::TempDir dir;
  EXPECT_EQ(invalid_argument(dir.path(), {.preset = "huge"}),
            "unknown model preset \"huge\" (use tiny or llama-7b-4layers)");
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(GenerateSyntheticModel, RejectsShardCountsOutOfRange) {
  testing::TempDir dir;
  EXPECT_EQ(invalid_argument(dir.path(), {.shards = 0}),
            "shards must be between 1 and 21 (the tensors of preset tiny), got 0");
  EXPECT_EQ(invalid_argument(dir.path(), {.shards = 22}),
            "shards must be between 1 and 21 (the tensors of preset tiny), got 22");
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(GenerateSyntheticModel, ThrowsStorageErrorForADirectoryItCannotCreate) {
  testing::TempDir dir;
  std::ofstream(dir.path() / "file") << "x";
  try {
    generate_synthetic_model(dir.path() / "file" / "model");
    FAIL() << "no StorageError";
  } catch (const StorageError& e) {
    EXPECT_EQ(typeid(e), typeid(StorageError));
    EXPECT_EQ(e.object(), (dir.path() / "file" / "model").string());
    EXPECT_EQ(e.cause(), "cannot create directory: Not a directory");
  }
}

}  // namespace
}  // namespace tensorstream
