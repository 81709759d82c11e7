// select_by_name: shell globs over tensor names, include and exclude lists.

#include "tensorstream/streaming/tensor_selection.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "streaming/checkpoint_files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

std::vector<std::string> chosen(const std::vector<std::string>& include,
                                const std::vector<std::string>& exclude) {
  const TensorSelection select = select_by_name(include, exclude);
  std::vector<std::string> names;
  for (const char* name : {"model.embed_tokens.weight", "model.layers.0.mlp.up_proj.weight",
                           "model.layers.0.self_attn.q_proj.weight",
                           "model.layers.10.mlp.up_proj.weight", "lm_head.weight"}) {
    TensorInfo tensor;
    tensor.name = name;
    if (select(tensor, "file:///m/model.safetensors")) names.push_back(name);
  }
  return names;
}

TEST(SelectByName, StarsCrossDotsAndExcludesWin) {
  EXPECT_EQ(chosen({"model.layers.*.mlp.*"}, {}),
            (std::vector<std::string>{"model.layers.0.mlp.up_proj.weight",
                                      "model.layers.10.mlp.up_proj.weight"}));
  EXPECT_EQ(chosen({"model.layers.?.*"}, {}),
            (std::vector<std::string>{"model.layers.0.mlp.up_proj.weight",
                                      "model.layers.0.self_attn.q_proj.weight"}));
  EXPECT_EQ(chosen({"lm_head.weight", "model.embed_tokens.*"}, {}),
            (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  EXPECT_EQ(chosen({}, {"model.layers.*"}),
            (std::vector<std::string>{"model.embed_tokens.weight", "lm_head.weight"}));
  EXPECT_EQ(chosen({"model.layers.*"}, {"*.mlp.*", "*q_proj*"}), std::vector<std::string>{});
  EXPECT_EQ(chosen({"model.layers.[1-9]*"}, {}),
            (std::vector<std::string>{"model.layers.10.mlp.up_proj.weight"}));
}

TEST(SelectByName, NoPatternsIsNoSelectionAndAnEmptyPatternIsAnError) {
  EXPECT_FALSE(select_by_name({}, {}));
  EXPECT_THROW(select_by_name({""}, {}), InvalidArgument);
  EXPECT_THROW(select_by_name({}, {""}), InvalidArgument);
}

TEST(SelectByName, AStreamLoadsExactlyTheMatchingTensors) {
  testing::TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  StreamerOptions options;
  options.select = select_by_name({"model.layers.1.*"}, {"*norm*"});
  std::set<std::string> expected;
  for (const auto& file : inspect(dir.path().string())) {
    for (const auto& tensor : file.header.tensors) {
      if (tensor.name.starts_with("model.layers.1.") &&
          tensor.name.find("norm") == std::string::npos) {
        expected.insert(tensor.name);
      }
    }
  }
  ASSERT_FALSE(expected.empty());
  RawStreamer streamer(dir.path().string(), options);
  std::set<std::string> names;
  while (auto tensor = streamer.next_blocking()) {
    names.insert(tensor->info.name);
    const auto bytes = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    ASSERT_TRUE(std::equal(bytes.begin(), bytes.end(), tensor->bytes().begin(),
                           tensor->bytes().end()))
        << tensor->info.name;
  }
  EXPECT_EQ(names, expected);
}

}  // namespace
}  // namespace tensorstream
