#pragma once
/// @file
/// A tensor's bytes as they landed, before any framework wraps them.

#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "tensorstream/safetensors/header.hpp"

namespace tensorstream {

/// One complete tensor: its header entry and the memory its bytes landed in.
///
/// The memory counts against the stream's memory_limit until the last copy of `data` is gone.
struct StreamedTensor {
  TensorInfo info;               ///< Name, dtype, shape and offsets from the header.
  std::string object;            ///< URL of the file the tensor came from.
  /// 64-byte aligned, except for a tensor of 1 MiB or more read with direct I/O, which lies as a
  /// memory map of its file would place it: at the file offset of its first byte modulo 4096.
  /// Never null, also for zero bytes.
  std::shared_ptr<std::byte> data;

  /// The tensor's bytes.
  std::span<std::byte> bytes() const { return {data.get(), info.byte_size()}; }
};

}  // namespace tensorstream
