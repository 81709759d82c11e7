#include "tensorstream/model/load_into_module.hpp"

#include <gtest/gtest.h>

#include <ATen/Functions.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstring>

#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

// A module holding one zero parameter per spec, under the spec's dotted name: submodules are made
// for every prefix ("model.layers.0..."), as a real model's classes would.
std::shared_ptr<torch::nn::Module> module_of(const std::vector<TensorSpec>& specs) {
  auto root = std::make_shared<torch::nn::Module>();
  for (const auto& spec : specs) {
    auto* module = root.get();
    std::string_view rest = spec.name;
    for (auto dot = rest.find('.'); dot != std::string_view::npos; dot = rest.find('.')) {
      const std::string child(rest.substr(0, dot));
      // named_children() returns a copy: the pointer find() gives must not outlive it.
      const auto children = module->named_children();
      const auto* existing = children.find(child);
      module = existing
                   ? existing->get()
                   : module->register_module(child, std::make_shared<torch::nn::Module>()).get();
      rest.remove_prefix(dot + 1);
    }
    module->register_parameter(std::string(rest), at::zeros(spec.shape, at::kBFloat16));
  }
  return root;
}

struct F32Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
};

std::string write_f32(const std::filesystem::path& path, const std::vector<F32Tensor>& tensors) {
  std::vector<TensorSpec> specs;
  std::vector<std::span<const std::byte>> data;
  for (const auto& tensor : tensors) {
    specs.push_back({tensor.name, Dtype::F32, tensor.shape});
    data.push_back(std::as_bytes(std::span(tensor.values)));
  }
  write_safetensors(path, specs, data);
  return path.string();
}

std::vector<float> values_of(const at::Tensor& tensor) {
  const auto contiguous = tensor.contiguous();
  const auto* data = contiguous.data_ptr<float>();
  return {data, data + contiguous.numel()};
}

class LoadIntoTensors : public ::testing::Test {
 protected:
  // One file: "w" [2, 3] holding 1..6 and "b" [2] holding 7, 8.
  void SetUp() override {
    path_ = write_f32(dir_.path() / "m.safetensors",
                      {{"w", {2, 3}, {1, 2, 3, 4, 5, 6}}, {"b", {2}, {7, 8}}});
  }

  LoadReport load(const std::map<std::string, at::Tensor>& targets,
                  const LoadOptions& options = {}) {
    SafeTensorsStreamer streamer(path_);
    return load_into_tensors_blocking(streamer, targets, options);
  }

  std::string load_error(const std::map<std::string, at::Tensor>& targets,
                         const LoadOptions& options = {}) {
    try {
      load(targets, options);
    } catch (const InvalidArgument& error) {
      return error.what();
    }
    return "no error";
  }

  TempDir dir_;
  std::string path_;
};

TEST(LoadIntoModule, FillsEveryParameterOfATinyLlamaWithItsExactBytes) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  const auto specs = llama_tensors(synthetic_preset("tiny"));
  const auto module = module_of(specs);
  SafeTensorsStreamer streamer(dir.path().string() + "/");

  const auto report = load_into_module_blocking(streamer, *module);

  std::uint64_t bytes = 0;
  for (const auto& spec : specs) bytes += tensor_byte_size(spec);
  EXPECT_EQ(report.tensors, specs.size());
  EXPECT_EQ(report.bytes, bytes);
  EXPECT_TRUE(report.ignored.empty());
  EXPECT_TRUE(report.missing.empty());
  const auto parameters = module->named_parameters();
  ASSERT_EQ(parameters.size(), specs.size());
  for (const auto& spec : specs) {
    const auto& parameter = parameters[spec.name];
    EXPECT_TRUE(parameter.requires_grad()) << spec.name;
    const auto expected = synthetic_bytes(spec.name, 0, tensor_byte_size(spec));
    ASSERT_EQ(parameter.nbytes(), expected.size()) << spec.name;
    EXPECT_EQ(std::memcmp(parameter.data_ptr(), expected.data(), expected.size()), 0) << spec.name;
  }
}

TEST(LoadIntoModule, AwaitableVersionLoadsFromACoroutine) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  const auto specs = llama_tensors(synthetic_preset("tiny"));
  const auto module = module_of(specs);
  SafeTensorsStreamer streamer(dir.path().string());
  boost::asio::io_context service;
  auto report =
      boost::asio::co_spawn(service, load_into_module(streamer, *module), boost::asio::use_future);
  service.run();
  EXPECT_EQ(report.get().tensors, specs.size());
  // A handle, not a reference: named_parameters() returns a copy that dies with the statement.
  const at::Tensor norm = module->named_parameters()["model.norm.weight"];
  const auto expected = synthetic_bytes("model.norm.weight", 0, norm.nbytes());
  EXPECT_EQ(std::memcmp(norm.data_ptr(), expected.data(), expected.size()), 0);
}

TEST_F(LoadIntoTensors, CopiesIntoTheNarrowedViewOfALargerTarget) {
  const auto w = at::zeros({3, 4});
  const auto b = at::zeros({5});
  const auto report = load({{"w", w}, {"b", b}});
  EXPECT_EQ(values_of(w), (std::vector<float>{1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0, 0}));
  EXPECT_EQ(values_of(b), (std::vector<float>{7, 8, 0, 0, 0}));
  EXPECT_EQ(report.tensors, 2u);
  EXPECT_EQ(report.bytes, 32u);
}

TEST_F(LoadIntoTensors, StrictModeListsEveryTargetNeverStreamed) {
  EXPECT_EQ(load_error({{"w", at::zeros({2, 3})},
                        {"b", at::zeros({2})},
                        {"z.bias", at::zeros({1})},
                        {"a.weight", at::zeros({1})}}),
            "Missing keys (never streamed from " + path_ + "): \"a.weight\", \"z.bias\"");
}

TEST_F(LoadIntoTensors, WithoutStrictMissingTargetsAreReported) {
  const auto report = load({{"w", at::zeros({2, 3})}, {"b", at::zeros({2})}, {"c", at::zeros({1})}},
                           {.strict = false});
  EXPECT_EQ(report.missing, std::vector<std::string>{"c"});
  EXPECT_EQ(report.tensors, 2u);
}

TEST_F(LoadIntoTensors, UnexpectedTensorIsAnError) {
  EXPECT_EQ(load_error({{"w", at::zeros({2, 3})}}),
            "unexpected tensor \"b\" from " + path_ + ": no parameter or buffer has that name");
}

TEST_F(LoadIntoTensors, UnexpectedTensorsAreIgnoredWhenAsked) {
  const auto w = at::zeros({2, 3});
  const auto report = load({{"w", w}}, {.ignore_unexpected = true});
  EXPECT_EQ(report.ignored, std::vector<std::string>{"b"});
  EXPECT_EQ(report.tensors, 1u);
  EXPECT_EQ(report.bytes, 24u);
  EXPECT_EQ(values_of(w), (std::vector<float>{1, 2, 3, 4, 5, 6}));
}

TEST_F(LoadIntoTensors, DtypeMismatchIsAnErrorWithoutConversion) {
  EXPECT_EQ(load_error({{"w", at::zeros({2, 3}, at::kDouble)}, {"b", at::zeros({2})}}),
            "tensor \"w\": dtype Float differs from the target's Double (convert_dtype converts "
            "it)");
}

TEST_F(LoadIntoTensors, ConversionCopiesIntoTheTargetsDtype) {
  const auto w = at::zeros({2, 3}, at::kDouble);
  const auto b = at::zeros({2}, at::kInt);
  load({{"w", w}, {"b", b}}, {.convert_dtype = true});
  EXPECT_EQ(w.scalar_type(), at::kDouble);
  EXPECT_TRUE(w.equal(at::arange(1, 7, at::kDouble).reshape({2, 3})));
  EXPECT_TRUE(b.equal(at::arange(7, 9, at::kInt)));
}

TEST_F(LoadIntoTensors, PrefixesAreStrippedThenAdded) {
  path_ = write_f32(dir_.path() / "prefixed.safetensors",
                    {{"model.w", {2}, {1, 2}}, {"head", {1}, {3}}});
  const auto w = at::zeros({2});
  const auto head = at::zeros({1});
  load({{"net.w", w}, {"net.head", head}}, {.strip_prefix = "model.", .add_prefix = "net."});
  EXPECT_EQ(values_of(w), (std::vector<float>{1, 2}));
  EXPECT_EQ(values_of(head), std::vector<float>{3});
  EXPECT_EQ(load_error({{"w", w}}, {.strip_prefix = "model."}),
            "unexpected tensor \"head\" from " + path_ + ": no parameter or buffer has that name");
  EXPECT_EQ(load_error({{"net.w", w}}, {.strip_prefix = "model.", .add_prefix = "net."}),
            "unexpected tensor \"head\" (as \"net.head\") from " + path_ +
                ": no parameter or buffer has that name");
}

TEST_F(LoadIntoTensors, TwoTensorsForOneTargetAreAnError) {
  path_ = write_f32(dir_.path() / "twice.safetensors", {{"model.w", {1}, {1}}, {"w", {2}, {2, 3}}});
  StreamerOptions sequential;  // the smaller tensor lands first
  sequential.max_concurrency = 1;
  SafeTensorsStreamer streamer(path_, "", sequential);
  try {
    load_into_tensors_blocking(streamer, {{"w", at::zeros({2})}}, {.strip_prefix = "model."});
    FAIL() << "no error";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "tensor \"w\": \"w\" was already loaded from \"model.w\"");
  }
}

TEST_F(LoadIntoTensors, ShapeMismatchNamesTheTensorAndBothShapes) {
  EXPECT_EQ(load_error({{"w", at::zeros({6})}, {"b", at::zeros({2})}}),
            "tensor \"w\": streamed shape [2, 3] does not fit the target's shape [6]");
  EXPECT_EQ(load_error({{"w", at::zeros({2, 3})}, {"b", at::zeros({1})}}),
            "tensor \"b\": streamed shape [2] does not fit the target's shape [1]");
}

}  // namespace
}  // namespace tensorstream
