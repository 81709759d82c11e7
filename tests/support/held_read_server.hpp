#pragma once
// A server whose one read stops part-way until the test lets it go on: what tests of progress
// counting need to see bytes counted within a read, without depending on timing.

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/fault_server.hpp"
#include "support/files.hpp"
#include "tensorstream/safetensors/writer.hpp"

namespace tensorstream::testing {

/// Serves `/one.safetensors`, one U8 tensor of `tensor_bytes` bytes of 7, written under `dir`.
/// The read of the tensor's bytes sends the first `sent` of them, then holds the rest until
/// the server's resume().
inline std::unique_ptr<FaultServer> serve_one_tensor_holding_its_read(
    const std::filesystem::path& dir, std::uint64_t tensor_bytes, std::uint64_t sent) {
  const auto path = dir / "one.safetensors";
  const std::vector<TensorSpec> specs{
      {"weight", Dtype::U8, {static_cast<std::int64_t>(tensor_bytes)}}};
  write_safetensors(path, specs, [](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
    std::fill(out.begin(), out.end(), std::byte{7});
  });
  const std::string object = read_file(path);
  std::uint64_t header_size = 0;
  std::memcpy(&header_size, object.data(), sizeof header_size);
  const std::uint64_t data_start = 8 + header_size;
  FaultServer::Behaviour behaviour;
  behaviour.pause_range = "bytes=" + std::to_string(data_start) + "-" +
                          std::to_string(data_start + tensor_bytes - 1);
  behaviour.pause_after = sent;
  return std::make_unique<FaultServer>("/one.safetensors", object, behaviour);
}

}  // namespace tensorstream::testing
