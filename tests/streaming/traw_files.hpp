#pragma once
// TRAW objects and trees written for the tests: the tensors of a synthetic preset, each shard's
// bytes taken from its own offset of the synthetic content so that shards differ.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"
#include "tensorstream/traw/format.hpp"

namespace tensorstream::testing {

/// Writes the TRAW object `path`: the header of `shape` and `dtype`, then `data`.
inline void write_traw(const std::filesystem::path& path, const std::vector<std::uint64_t>& shape,
                       Dtype dtype, std::span<const std::byte> data) {
  const auto header = traw::encode_header(shape, dtype);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(header.data()),
            static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

/// Bytes of `spec`'s tensor.
inline std::uint64_t byte_size_of(const TensorSpec& spec) {
  std::uint64_t size = element_size(spec.dtype);
  for (const auto dim : spec.shape) size *= static_cast<std::uint64_t>(dim);
  return size;
}

/// Where shard `rank` of partition `size` takes its bytes from in the synthetic content.
inline std::uint64_t shard_offset(int size, int rank) {
  return static_cast<std::uint64_t>(size) * 1000 + static_cast<std::uint64_t>(rank);
}

/// Writes `directory`/<name>.bin for every tensor of `preset`, with the synthetic bytes of each
/// tensor from byte `offset` on.
inline void write_traw_shard(const std::filesystem::path& directory, std::uint64_t offset,
                             const std::string& preset = "tiny") {
  std::filesystem::create_directories(directory);
  for (const auto& spec : llama_tensors(synthetic_preset(preset))) {
    const std::vector<std::uint64_t> shape(spec.shape.begin(), spec.shape.end());
    const auto bytes = synthetic_bytes(spec.name, offset, byte_size_of(spec));
    write_traw(directory / (spec.name + ".bin"), shape, spec.dtype, bytes);
  }
}

/// Writes `root`/TP{n}/shard{r}/ for every n of `sizes` and r below it, as write_traw_shard()
/// with shard_offset(n, r).
inline void write_traw_tree(const std::filesystem::path& root, const std::vector<int>& sizes) {
  for (const int size : sizes) {
    for (int rank = 0; rank < size; ++rank) {
      write_traw_shard(root / ("TP" + std::to_string(size)) / ("shard" + std::to_string(rank)),
                       shard_offset(size, rank));
    }
  }
}

/// Options selecting shard `rank` of partition `size`, in chunks small enough that the tiny
/// preset's tensors take several reads.
inline StreamerOptions partition_options(int size, int rank) {
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  options.max_concurrency = 8;
  options.tensor_parallel_size = size;
  options.rank = rank;
  return options;
}

/// Streams everything `streamer` yields and checks it is the shard write_traw_shard() wrote with
/// `offset`: every tensor of `preset` once, with its name, dtype, shape and exact bytes.
inline void expect_traw_shard(RawStreamer& streamer, std::uint64_t offset,
                              const std::string& preset = "tiny") {
  std::map<std::string, TensorSpec> specs;
  for (auto& spec : llama_tensors(synthetic_preset(preset))) specs.emplace(spec.name, spec);
  std::set<std::string> names;
  while (auto tensor = streamer.next_blocking()) {
    const auto spec = specs.find(tensor->info.name);
    ASSERT_NE(spec, specs.end()) << "unexpected tensor " << tensor->info.name;
    EXPECT_EQ(tensor->info.dtype, spec->second.dtype) << tensor->info.name;
    EXPECT_EQ(tensor->info.shape, spec->second.shape) << tensor->info.name;
    const auto expected = synthetic_bytes(tensor->info.name, offset, byte_size_of(spec->second));
    ASSERT_EQ(tensor->bytes().size(), expected.size()) << tensor->info.name;
    EXPECT_EQ(std::memcmp(tensor->bytes().data(), expected.data(), expected.size()), 0)
        << "bytes differ in " << tensor->info.name;
    EXPECT_TRUE(names.insert(tensor->info.name).second) << "yielded twice: " << tensor->info.name;
  }
  EXPECT_EQ(names.size(), specs.size());
}

/// Streams the single TRAW object `url` that write_traw_shard() wrote with `offset` and checks it
/// is tensor `name` of `preset`, from `url`, with its dtype, shape and exact bytes.
inline void expect_traw_object(const std::string& url, const std::string& name,
                               std::uint64_t offset, const std::string& preset = "tiny") {
  const auto specs = llama_tensors(synthetic_preset(preset));
  const auto spec = std::find_if(specs.begin(), specs.end(), [&](const TensorSpec& candidate) {
    return candidate.name == name;
  });
  ASSERT_NE(spec, specs.end()) << name;
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  RawStreamer streamer(url, options);
  const auto tensor = streamer.next_blocking();
  ASSERT_TRUE(tensor) << url;
  EXPECT_EQ(tensor->info.name, name);
  EXPECT_EQ(tensor->info.dtype, spec->dtype);
  EXPECT_EQ(tensor->info.shape, spec->shape);
  EXPECT_EQ(tensor->object, url);
  const auto expected = synthetic_bytes(name, offset, byte_size_of(*spec));
  EXPECT_EQ(std::vector<std::byte>(tensor->bytes().begin(), tensor->bytes().end()), expected);
  EXPECT_FALSE(streamer.next_blocking());
}

}  // namespace tensorstream::testing
