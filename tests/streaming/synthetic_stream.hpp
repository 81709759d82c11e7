#pragma once
// What streaming a synthetic checkpoint must give, for the tests of every backend.

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>

#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream::testing {

/// Every tensor a stream of `url` yields: its bytes by name, for comparing two streams.
inline std::map<std::string, std::string> tensor_bytes(const std::string& url,
                                                       StreamerOptions options) {
  RawStreamer streamer(url, std::move(options));
  std::map<std::string, std::string> tensors;
  while (auto tensor = streamer.next_blocking()) {
    const auto bytes = tensor->bytes();
    tensors[tensor->info.name] =
        std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  return tensors;
}

/// Checks that `tensor` holds exactly the bytes generate_synthetic_model() wrote for it.
inline void expect_synthetic(const StreamedTensor& tensor) {
  const auto expected = synthetic_bytes(tensor.info.name, 0, tensor.info.byte_size());
  ASSERT_EQ(tensor.bytes().size(), expected.size()) << tensor.info.name;
  // A zero-byte tensor has no memory: memcmp must not be handed its null pointer.
  if (expected.empty()) return;
  EXPECT_EQ(std::memcmp(tensor.bytes().data(), expected.data(), expected.size()), 0)
      << "bytes differ in " << tensor.info.name;
}

/// Streams everything `streamer` yields and checks that it is exactly the synthetic `preset`
/// model: every tensor once, each byte as generate_synthetic_model() wrote it.
inline void expect_whole_model(RawStreamer& streamer, const std::string& preset = "tiny") {
  std::set<std::string> names;
  while (auto tensor = streamer.next_blocking()) {
    const auto expected = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    ASSERT_EQ(tensor->bytes().size(), expected.size());
    EXPECT_EQ(std::memcmp(tensor->bytes().data(), expected.data(), expected.size()), 0)
        << "bytes differ in " << tensor->info.name;
    EXPECT_TRUE(names.insert(tensor->info.name).second) << "yielded twice: " << tensor->info.name;
  }
  std::set<std::string> expected;
  for (const auto& spec : llama_tensors(synthetic_preset(preset))) expected.insert(spec.name);
  EXPECT_EQ(names, expected);
}

/// Chunks small enough that even the tiny model takes many range reads per tensor.
inline StreamerOptions small_chunks() {
  StreamerOptions options;
  options.chunk_size = 100 * 1000;
  options.max_concurrency = 8;
  return options;
}

}  // namespace tensorstream::testing
