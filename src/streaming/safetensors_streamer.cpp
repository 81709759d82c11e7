#include "tensorstream/streaming/safetensors_streamer.hpp"

#include <ATen/Functions.h>

namespace tensorstream {
namespace {

c10::ScalarType scalar_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::F64: return c10::ScalarType::Double;
    case Dtype::F32: return c10::ScalarType::Float;
    case Dtype::F16: return c10::ScalarType::Half;
    case Dtype::BF16: return c10::ScalarType::BFloat16;
    case Dtype::I64: return c10::ScalarType::Long;
    case Dtype::I32: return c10::ScalarType::Int;
    case Dtype::I16: return c10::ScalarType::Short;
    case Dtype::I8: return c10::ScalarType::Char;
    case Dtype::U8: return c10::ScalarType::Byte;
    case Dtype::BOOL: return c10::ScalarType::Bool;
    case Dtype::F8_E5M2:
    case Dtype::F8_E4M3: return c10::ScalarType::Byte;
  }
  return c10::ScalarType::Byte;
}

}  // namespace

at::Tensor to_torch(const StreamedTensor& tensor) {
  return at::from_blob(
      tensor.data.get(), tensor.info.shape, [keep_alive = tensor.data](void*) {},
      at::TensorOptions().dtype(scalar_type(tensor.info.dtype)).device(at::kCPU));
}

SafeTensorsStreamer::SafeTensorsStreamer(std::string remote_path, std::string local_path,
                                         StreamerOptions options)
    : raw_(std::move(remote_path), std::move(options)), local_path_(std::move(local_path)) {}

SafeTensorsStreamer::SafeTensorsStreamer(boost::asio::any_io_executor executor,
                                         std::string remote_path, std::string local_path,
                                         StreamerOptions options)
    : raw_(std::move(executor), std::move(remote_path), std::move(options)),
      local_path_(std::move(local_path)) {}

boost::asio::awaitable<std::optional<NamedTensor>> SafeTensorsStreamer::next() {
  auto tensor = co_await raw_.next();
  if (!tensor) co_return std::nullopt;
  co_return NamedTensor(tensor->info.name, to_torch(*tensor));
}

std::optional<NamedTensor> SafeTensorsStreamer::next_blocking() {
  auto tensor = raw_.next_blocking();
  if (!tensor) return std::nullopt;
  return NamedTensor(tensor->info.name, to_torch(*tensor));
}

}  // namespace tensorstream
