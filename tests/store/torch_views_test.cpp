#include "tensorstream/store/torch_views.hpp"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "store/attach_fixture.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/load_into_module.hpp"

namespace tensorstream::store::testing {
namespace {

using TorchViewsTest = AttachServerTest;

std::string bytes_of(const at::Tensor& tensor) {
  return {static_cast<const char*>(tensor.data_ptr()), tensor.nbytes()};
}

TEST_F(TorchViewsTest, TensorsAreTheMappedBytes) {
  start_attach_server();
  std::map<std::string, at::Tensor> tensors;
  {
    const AttachedRank rank = attach(socket_path_, 0);
    tensors = torch_tensors(rank);
    ASSERT_EQ(tensors.size(), 5u);
    const auto& embed = tensors.at("model.embed_tokens.weight");
    EXPECT_EQ(embed.data_ptr(), rank.bytes(*rank.find("model.embed_tokens.weight")).data());
  }
  // The rank is gone; the tensors keep the mappings.
  const std::string weights = weights_content();
  const std::string kv = kv_content();
  for (const auto& entry : manifest().tensors) {
    SCOPED_TRACE(entry.name);
    const at::Tensor& tensor = tensors.at(entry.name);
    EXPECT_EQ(tensor.sizes().vec(), entry.shape);
    EXPECT_TRUE(tensor.is_contiguous());
    const std::string& region = entry.region == "weights" ? weights : kv;
    EXPECT_EQ(bytes_of(tensor), region.substr(entry.offset, entry.bytes));
  }
  EXPECT_EQ(tensors.at("model.embed_tokens.weight").scalar_type(), at::kBFloat16);
  EXPECT_EQ(tensors.at("model.norm.weight").scalar_type(), at::kFloat);
  EXPECT_EQ(tensors.at("lm_head.scale").scalar_type(), at::kByte);
  EXPECT_EQ(tensors.at("model.layers.0.self_attn.kv_cache.key").scalar_type(), at::kHalf);
  float first = 0;
  std::memcpy(&first, weights.data() + 256, sizeof first);
  EXPECT_EQ(tensors.at("model.norm.weight")[0][0].item<float>(), first);
}

TEST_F(TorchViewsTest, KvCacheTensorsWriteTheSharedMemory) {
  start_attach_server();
  auto tensors = torch_tensors(attach(socket_path_, 0));
  tensors.at("model.layers.0.self_attn.kv_cache.key").fill_(1.0);
  std::string expected = kv_content();
  // 1.0 in IEEE half precision is 0x3c00, little-endian.
  for (std::size_t i = 0; i < 256; i += 2) expected.replace(i, 2, std::string("\x00\x3c", 2));
  EXPECT_EQ(mapped_content(kv_.get()), expected);
}

TEST_F(TorchViewsTest, PrivateWeightsTakeInPlaceOperationsPrivately) {
  start_attach_server();
  AttachOptions options;
  options.private_weights = true;
  auto tensors = torch_tensors(attach(socket_path_, 0, options));
  at::Tensor& norm = tensors.at("model.norm.weight");
  norm.zero_();
  EXPECT_EQ(norm.abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(mapped_content(weights_.get()), weights_content());
}

// model.norm.weight of a module, for load_into_module() to fill from the rank.
std::shared_ptr<torch::nn::Module> norm_module() {
  auto root = std::make_shared<torch::nn::Module>();
  auto model = root->register_module("model", std::make_shared<torch::nn::Module>());
  auto norm = model->register_module("norm", std::make_shared<torch::nn::Module>());
  norm->register_parameter("weight", at::zeros({2, 4}, at::kFloat));
  return root;
}

TEST_F(TorchViewsTest, LoadIntoModuleCopiesTheRanksTensorsIntoParameters) {
  start_attach_server();
  const auto module = norm_module();
  LoadOptions options;
  options.ignore_unexpected = true;
  const LoadReport report = load_into_module(attach(socket_path_, 0), *module, options);
  EXPECT_EQ(report.tensors, 1u);
  EXPECT_EQ(report.ignored.size(), 4u);
  const at::Tensor weight = module->named_parameters()["model.norm.weight"];
  EXPECT_EQ(bytes_of(weight), weights_content().substr(256, 32));
}

TEST_F(TorchViewsTest, LoadIntoModuleNamesTheRankOfAnUnexpectedTensor) {
  start_attach_server();
  const auto module = norm_module();
  try {
    load_into_module(attach(socket_path_, 0), *module);
    FAIL() << "loaded";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "unexpected tensor \"lm_head.scale\" from " + socket_path_.string() +
                  " rank 0: no parameter or buffer has that name");
  }
}

}  // namespace
}  // namespace tensorstream::store::testing
