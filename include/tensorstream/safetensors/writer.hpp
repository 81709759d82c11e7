#pragma once
/// @file
/// Writing safetensors files with bounded memory: the header encoding and a streaming file writer.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/safetensors/dtype.hpp"

namespace tensorstream {

/// A tensor to write: its bytes follow the previous tensor's in the data region.
struct TensorSpec {
  std::string name;
  Dtype dtype = Dtype::U8;
  std::vector<std::int64_t> shape;

  bool operator==(const TensorSpec&) const = default;
};

/// Produces a tensor's bytes: fills all of `destination` with the bytes of `tensor` that start at
/// byte `offset` of that tensor. The writer asks for each tensor's bytes in order, in pieces no
/// larger than its buffer (16 MiB), and `tensor` is the element of the span it was given.
using TensorFiller = std::function<void(const TensorSpec& tensor, std::uint64_t offset,
                                        std::span<std::byte> destination)>;

/// Bytes the tensor occupies: product of the shape (1 for a scalar) × element size. Throws
/// InvalidArgument naming the tensor for a negative dimension or a size that overflows int64.
TENSORSTREAM_API
std::uint64_t tensor_byte_size(const TensorSpec& tensor);

/// The start of a safetensors file holding `tensors` back to back in the given order: the 8-byte
/// little-endian length, then the JSON header padded with spaces to a multiple of 8 bytes (as the
/// reference implementation does, so the data region is 8-byte aligned). `__metadata__` is
/// {"format": "pt"} plus `metadata`. Throws InvalidArgument for a bad shape, a duplicate name, the
/// name `__metadata__`, a name or metadata string that is not UTF-8, or a metadata "format" other
/// than "pt".
TENSORSTREAM_API
std::string encode_header(std::span<const TensorSpec> tensors,
                          const std::map<std::string, std::string>& metadata = {});

/// Writes the safetensors file `path`, asking `fill` for the tensors' bytes. Memory stays bounded
/// by the 16 MiB buffer whatever the file's size. The file appears complete or not at all (it is
/// written as `<path>.partial`, then renamed). Returns the file's size. Throws InvalidArgument as
/// encode_header does, StorageError naming the path when writing fails; exceptions from `fill`
/// propagate.
TENSORSTREAM_API
std::uint64_t write_safetensors(const std::filesystem::path& path,
                                std::span<const TensorSpec> tensors, const TensorFiller& fill,
                                const std::map<std::string, std::string>& metadata = {});

/// Writes the safetensors file `path` with the bytes of tensors[i] taken from data[i], which must
/// hold exactly tensor_byte_size(tensors[i]) bytes (InvalidArgument otherwise).
TENSORSTREAM_API
std::uint64_t write_safetensors(const std::filesystem::path& path,
                                std::span<const TensorSpec> tensors,
                                std::span<const std::span<const std::byte>> data,
                                const std::map<std::string, std::string>& metadata = {});

}  // namespace tensorstream
