#pragma once
// Small checkpoints written by hand for the discovery tests, and what streaming them yields.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "support/logged_messages.hpp"
#include "tensorstream/safetensors/writer.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::testing {

/// Writes a safetensors file of U8 tensors, each `bytes` long and filled with `fill`.
inline void write_checkpoint(const std::filesystem::path& path,
                             const std::vector<std::pair<std::string, std::uint64_t>>& tensors,
                             std::byte fill = std::byte{7}) {
  std::vector<TensorSpec> specs;
  for (const auto& [name, bytes] : tensors) {
    specs.push_back({name, Dtype::U8, {static_cast<std::int64_t>(bytes)}});
  }
  write_safetensors(path, specs,
                    [fill](const TensorSpec&, std::uint64_t, std::span<std::byte> out) {
                      std::fill(out.begin(), out.end(), fill);
                    });
}

/// Writes a safetensors file whose header is `json` as given, followed by `data_bytes` zeros.
inline void write_raw_checkpoint(const std::filesystem::path& path, const std::string& json,
                                 std::size_t data_bytes) {
  std::string bytes(8, '\0');
  const std::uint64_t length = json.size();
  std::memcpy(bytes.data(), &length, 8);
  std::ofstream(path, std::ios::binary) << bytes << json << std::string(data_bytes, '\0');
}

/// Writes `text` to `path`.
inline void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

/// Every tensor of the stream by name, failing the test if a name comes twice.
inline std::map<std::string, StreamedTensor> stream_by_name(RawStreamer& streamer) {
  std::map<std::string, StreamedTensor> tensors;
  while (auto tensor = streamer.next_blocking()) {
    const std::string name = tensor->info.name;
    EXPECT_TRUE(tensors.emplace(name, std::move(*tensor)).second) << "yielded twice: " << name;
  }
  return tensors;
}

/// The message of the exception of type E that streaming `url` throws (a test failure if none).
template <class E>
std::string stream_error(const std::string& url, StreamerOptions options = {}) {
  try {
    RawStreamer streamer(url, options);
    while (streamer.next_blocking()) {
    }
  } catch (const E& error) {
    return error.what();
  }
  ADD_FAILURE() << "streaming " << url << " did not throw the expected error";
  return "";
}

/// The names of `tensors`.
inline std::vector<std::string> names_of(const std::map<std::string, StreamedTensor>& tensors) {
  std::vector<std::string> names;
  for (const auto& [name, tensor] : tensors) names.push_back(name);
  return names;
}

}  // namespace tensorstream::testing
