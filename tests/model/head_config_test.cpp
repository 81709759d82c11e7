#include "tensorstream/model/head_config.hpp"

#include <gtest/gtest.h>

#include "safetensors/test_files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"

namespace tensorstream {
namespace {

std::string head_config_error(std::string_view json) {
  try {
    parse_head_config(json, "/m/config.json");
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "no error";
}

void expect_heads(const HeadConfig& heads, std::int64_t attention, std::int64_t key_value,
                  std::int64_t head_dim) {
  EXPECT_EQ(heads.num_attention_heads, attention);
  EXPECT_EQ(heads.num_key_value_heads, key_value);
  EXPECT_EQ(heads.head_dim, head_dim);
}

TEST(HeadConfig, ReadsTheHeadsOfAGeneratedLlamaConfig) {
  testing::TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  expect_heads(parse_head_config(read_file(dir.path() / "config.json"), "config.json"), 8, 4, 32);
}

TEST(HeadConfig, KeyValueHeadsDefaultToAttentionHeads) {
  expect_heads(parse_head_config(R"({"hidden_size": 4096, "num_attention_heads": 32})", "c"), 32,
               32, 128);
}

TEST(HeadConfig, AnExplicitHeadDimWinsOverHiddenSize) {
  expect_heads(parse_head_config(
                   R"({"hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8,
                       "head_dim": 128})",
                   "c"),
               32, 8, 128);
  expect_heads(
      parse_head_config(R"({"hidden_size": 512, "num_attention_heads": 8, "head_dim": null})", "c"),
      8, 8, 64);
}

TEST(HeadConfig, InvalidConfigsAreErrorsNamingTheFileAndField) {
  EXPECT_EQ(head_config_error(R"({"hidden_size": 512})"),
            "/m/config.json: \"num_attention_heads\" is missing");
  EXPECT_EQ(head_config_error(R"({"num_attention_heads": 8})"),
            "/m/config.json: \"hidden_size\" is missing");
  EXPECT_EQ(head_config_error(R"({"hidden_size": 500, "num_attention_heads": 8})"),
            "/m/config.json: hidden_size 500 is not a multiple of num_attention_heads 8");
  EXPECT_EQ(head_config_error(R"({"hidden_size": 512, "num_attention_heads": "8"})"),
            "/m/config.json: \"num_attention_heads\" is not an integer");
  EXPECT_EQ(head_config_error(R"({"hidden_size": 512, "num_attention_heads": 8,
                                  "num_key_value_heads": 0})"),
            "/m/config.json: \"num_key_value_heads\" must be positive, got 0");
  EXPECT_EQ(head_config_error("[1, 2]"), "/m/config.json: not a JSON object");
  EXPECT_EQ(head_config_error("{\"hidden_size\": ").rfind("/m/config.json: invalid JSON: ", 0), 0u);
}

}  // namespace
}  // namespace tensorstream
