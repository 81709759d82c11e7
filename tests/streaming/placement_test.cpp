// StreamerOptions::placement: tensors landing in the caller's memory, as the store server lands a
// rank's tensors in its shared-memory region.

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>

#include "support/temp_dir.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/inspect.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::TempDir;

// One buffer with a 64-byte aligned place for every tensor of the tiny checkpoint.
struct Arena {
  std::vector<std::byte> bytes;
  std::map<std::string, std::uint64_t> offsets;

  explicit Arena(const std::vector<FileHeader>& files) {
    std::uint64_t end = 0;
    for (const auto& file : files) {
      for (const auto& tensor : file.header.tensors) {
        offsets[tensor.name] = end;
        end += (tensor.byte_size() + 63) / 64 * 64;
      }
    }
    bytes.resize(end + 64);
  }

  std::byte* place(const std::string& name) {
    auto* base = reinterpret_cast<std::byte*>(
        (reinterpret_cast<std::uintptr_t>(bytes.data()) + 63) / 64 * 64);
    return base + offsets.at(name);
  }
};

// A place in `arena` that shares its ownership, as StreamerOptions::placement asks.
std::shared_ptr<std::byte> shared_place(const std::shared_ptr<Arena>& arena,
                                        const std::string& name) {
  return {arena, arena->place(name)};
}

TEST(Placement, TensorsLandInTheCallersMemoryOutsideTheMemoryLimit) {
  TempDir dir;
  generate_synthetic_model(dir.path(), {.preset = "tiny", .shards = 2});
  const auto files = inspect(dir.path().string() + "/");
  const auto arena = std::make_shared<Arena>(files);
  StreamerOptions options;
  options.chunk_size = 64 * 1024;
  // Far below the 3.8 MiB model, and every tensor is kept until the end: only placed memory
  // lets that finish.
  options.memory_limit = 256 * 1024;
  std::size_t placed = 0;
  options.placement = [&](const TensorInfo& tensor, const std::string&) {
    ++placed;
    return shared_place(arena, tensor.name);
  };
  std::vector<StreamedTensor> kept;
  {
    RawStreamer streamer(dir.path().string() + "/", options);
    while (auto tensor = streamer.next_blocking()) kept.push_back(std::move(*tensor));
    // Only the shared reads of small tensors (norms) took memory of the stream's own.
    EXPECT_LT(streamer.stats().peak_memory, 64u * 1024);
  }
  const auto expected_count = llama_tensors(synthetic_preset("tiny")).size();
  EXPECT_EQ(kept.size(), expected_count);
  EXPECT_EQ(placed, expected_count);
  std::size_t sharing = 0;
  for (const auto& tensor : kept) {
    SCOPED_TRACE(tensor.info.name);
    EXPECT_EQ(tensor.data.get(), arena->place(tensor.info.name));
    const auto bytes = synthetic_bytes(tensor.info.name, 0, tensor.info.byte_size());
    EXPECT_EQ(std::memcmp(arena->place(tensor.info.name), bytes.data(), bytes.size()), 0);
    // A placed tensor shares the arena's ownership; a coalesced one was copied into it.
    sharing += tensor.data.get() == arena->place(tensor.info.name);
  }
  // The stream let go of the arena when it ended; the kept tensors still hold it.
  EXPECT_EQ(arena.use_count(), static_cast<long>(1 + sharing));
  kept.clear();
  EXPECT_EQ(arena.use_count(), 1);
}

TEST(Placement, TensorsNotPlacedGetTheStreamsOwnMemory) {
  TempDir dir;
  generate_synthetic_model(dir.path());
  const auto files = inspect(dir.path().string() + "/");
  const auto arena = std::make_shared<Arena>(files);
  StreamerOptions options;
  options.placement = [&](const TensorInfo& tensor,
                          const std::string& object) -> std::shared_ptr<std::byte> {
    EXPECT_EQ(object, (dir.path() / "model.safetensors").string());
    if (tensor.name.find("mlp") == std::string::npos) return nullptr;
    return shared_place(arena, tensor.name);
  };
  RawStreamer streamer(dir.path().string() + "/", options);
  std::size_t in_arena = 0;
  while (auto tensor = streamer.next_blocking()) {
    SCOPED_TRACE(tensor->info.name);
    const bool mlp = tensor->info.name.find("mlp") != std::string::npos;
    EXPECT_EQ(tensor->data.get() == arena->place(tensor->info.name), mlp);
    in_arena += mlp;
    const auto bytes = synthetic_bytes(tensor->info.name, 0, tensor->info.byte_size());
    EXPECT_EQ(std::memcmp(tensor->data.get(), bytes.data(), bytes.size()), 0);
  }
  EXPECT_EQ(in_arena, 6u);
}

}  // namespace
}  // namespace tensorstream
