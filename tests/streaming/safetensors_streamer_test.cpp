#include "tensorstream/streaming/safetensors_streamer.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstring>
#include <map>

#include "streaming/traw_files.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

struct DtypeCase {
  Dtype dtype;
  c10::ScalarType scalar_type;
};

const DtypeCase dtype_cases[] = {
    {Dtype::F64, c10::ScalarType::Double},  {Dtype::F32, c10::ScalarType::Float},
    {Dtype::F16, c10::ScalarType::Half},    {Dtype::BF16, c10::ScalarType::BFloat16},
    {Dtype::I64, c10::ScalarType::Long},    {Dtype::I32, c10::ScalarType::Int},
    {Dtype::I16, c10::ScalarType::Short},   {Dtype::I8, c10::ScalarType::Char},
    {Dtype::U8, c10::ScalarType::Byte},     {Dtype::BOOL, c10::ScalarType::Bool},
    {Dtype::F8_E5M2, c10::ScalarType::Byte}, {Dtype::F8_E4M3, c10::ScalarType::Byte},
};

std::string name_of(Dtype dtype) { return "t." + std::string(dtype_name(dtype)); }

// One [3, 5] tensor of every dtype; BOOL gets bytes 0 and 1 only, as torch requires.
std::filesystem::path write_every_dtype(const std::filesystem::path& dir) {
  std::vector<TensorSpec> specs;
  for (const auto& c : dtype_cases) specs.push_back({name_of(c.dtype), c.dtype, {3, 5}});
  const auto path = dir / "dtypes.safetensors";
  write_safetensors(path, specs, [](const TensorSpec& spec, std::uint64_t offset, std::span<std::byte> out) {
    fill_synthetic_bytes(spec.name, offset, out);
    if (spec.dtype == Dtype::BOOL) {
      for (auto& b : out) b &= std::byte{1};
    }
  });
  return path;
}

TEST(SafeTensorsStreamer, EveryDtypeBecomesTheMatchingTorchTensorWithoutCopying) {
  TempDir dir;
  const auto path = write_every_dtype(dir.path());
  SafeTensorsStreamer streamer(path.string());
  std::map<std::string, at::Tensor> tensors;
  for (auto& [name, tensor] : streamer.get_tensors()) tensors.emplace(name, tensor);
  ASSERT_EQ(tensors.size(), std::size(dtype_cases));
  for (const auto& c : dtype_cases) {
    const auto& tensor = tensors.at(name_of(c.dtype));
    EXPECT_EQ(tensor.scalar_type(), c.scalar_type) << dtype_name(c.dtype);
    EXPECT_EQ(tensor.sizes().vec(), (std::vector<std::int64_t>{3, 5}));
    EXPECT_TRUE(tensor.is_contiguous());
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(tensor.data_ptr()) % 64, 0u);
    auto expected = synthetic_bytes(name_of(c.dtype), 0, tensor.nbytes());
    if (c.dtype == Dtype::BOOL) {
      for (auto& b : expected) b &= std::byte{1};
    }
    EXPECT_EQ(std::memcmp(tensor.data_ptr(), expected.data(), expected.size()), 0)
        << dtype_name(c.dtype);
  }
}

TEST(SafeTensorsStreamer, ATrawPartitionBecomesTorchTensorsOfItsShapes) {
  TempDir dir;
  testing::write_traw_tree(dir.path(), {2});
  SafeTensorsStreamer streamer(dir.path().string(), "/srv/model",
                               testing::partition_options(2, 1));
  std::map<std::string, TensorSpec> specs;
  for (auto& spec : llama_tensors(synthetic_preset("tiny"))) specs.emplace(spec.name, spec);
  std::size_t count = 0;
  for (auto& [name, tensor] : streamer.get_tensors()) {
    const auto& spec = specs.at(name);
    EXPECT_EQ(tensor.scalar_type(), c10::ScalarType::BFloat16) << name;
    EXPECT_EQ(tensor.sizes().vec(), spec.shape) << name;
    const auto expected = synthetic_bytes(name, testing::shard_offset(2, 1), tensor.nbytes());
    EXPECT_EQ(std::memcmp(tensor.data_ptr(), expected.data(), expected.size()), 0) << name;
    ++count;
  }
  EXPECT_EQ(count, specs.size());
}

TEST(SafeTensorsStreamer, ZeroByteTensorIsYieldedWithItsShape) {
  TempDir dir;
  const auto path = dir.path() / "empty.safetensors";
  const std::vector<TensorSpec> specs{{"empty", Dtype::BF16, {0, 8}}, {"x", Dtype::F32, {2}}};
  write_safetensors(path, specs, [](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{0});
  });
  SafeTensorsStreamer streamer(path.string());
  std::map<std::string, at::Tensor> tensors;
  for (auto& [name, tensor] : streamer.get_tensors()) tensors.emplace(name, tensor);
  ASSERT_EQ(tensors.count("empty"), 1u);
  EXPECT_EQ(tensors.at("empty").sizes().vec(), (std::vector<std::int64_t>{0, 8}));
  EXPECT_EQ(tensors.at("empty").scalar_type(), c10::ScalarType::BFloat16);
}

TEST(SafeTensorsStreamer, ATensorViewKeepsItsMemoryInTheBudget) {
  TempDir dir;
  const auto path = dir.path() / "m.safetensors";
  const std::vector<TensorSpec> specs{{"a", Dtype::U8, {600}}, {"b", Dtype::U8, {600}}};
  write_safetensors(path, specs, [](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{3});
  });
  StreamerOptions options;
  options.memory_limit = 1000;
  options.memory_accounting = MemoryAccounting::until_released;
  SafeTensorsStreamer streamer(path.string(), "", options);
  auto first = streamer.next_blocking().value();
  at::Tensor view = first.second.slice(0, 0, 10);
  first.second = at::Tensor();
  EXPECT_THROW(streamer.next_blocking(), Error) << "the view still holds 600 of 1000 bytes";
  EXPECT_EQ(view.sum().item<std::int64_t>(), 30);
}

TEST(SafeTensorsStreamer, CoroutineApiYieldsNamedTensors) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny"});
  SafeTensorsStreamer streamer(dir.path().string(), "/srv/model");
  EXPECT_EQ(streamer.local_path(), "/srv/model");
  boost::asio::io_context service;
  auto count = boost::asio::co_spawn(
      service,
      [&]() -> boost::asio::awaitable<std::size_t> {
        std::size_t n = 0;
        while (auto tensor = co_await streamer.next()) {
          EXPECT_EQ(tensor->second.scalar_type(), c10::ScalarType::BFloat16) << tensor->first;
          ++n;
        }
        co_return n;
      },
      boost::asio::use_future);
  service.run();
  EXPECT_EQ(count.get(), llama_tensors(synthetic_preset("tiny")).size());
}

}  // namespace
}  // namespace tensorstream
