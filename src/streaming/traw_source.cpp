#include "streaming/traw_source.hpp"

#include <limits>

#include "tensorstream/error.hpp"
#include "tensorstream/traw/format.hpp"

namespace tensorstream::detail {

std::string traw_tensor_name(std::string_view key) {
  const auto slash = key.rfind('/');
  std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  if (name.ends_with(traw_suffix)) name.remove_suffix(traw_suffix.size());
  return std::string(name);
}

SourceFile traw_source_file(std::string key, std::string url, std::uint64_t size,
                            std::span<const std::byte> prefix) {
  const traw::Header header = traw::parse_header(prefix, size, url);
  TensorInfo tensor;
  tensor.name = traw_tensor_name(key);
  tensor.dtype = header.dtype;
  for (std::size_t i = 0; i < header.shape.size(); ++i) {
    const std::uint64_t dim = header.shape[i];
    if (dim > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      throw FormatError(url + ": TRAW shape[" + std::to_string(i) + "] is " + std::to_string(dim) +
                        ", beyond the int64 range of a tensor's shape");
    }
    tensor.shape.push_back(static_cast<std::int64_t>(dim));
  }
  tensor.end = header.data_size;
  SourceFile file;
  file.key = std::move(key);
  file.url = std::move(url);
  file.size = size;
  file.header.data_start = header.header_size();
  file.header.tensors.push_back(std::move(tensor));
  return file;
}

}  // namespace tensorstream::detail
