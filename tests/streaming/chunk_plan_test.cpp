#include "tensorstream/streaming/chunk_plan.hpp"

#include <gtest/gtest.h>

namespace tensorstream {
namespace {

TEST(ChunkPlan, TensorSmallerThanAChunkIsOneRead) {
  EXPECT_EQ(plan_chunks(100, 1024), (std::vector<Chunk>{{0, 100}}));
}

TEST(ChunkPlan, TensorEqualToAChunkIsOneRead) {
  EXPECT_EQ(plan_chunks(1024, 1024), (std::vector<Chunk>{{0, 1024}}));
}

TEST(ChunkPlan, OneByteOverAChunkAddsAOneByteRead) {
  EXPECT_EQ(plan_chunks(1025, 1024), (std::vector<Chunk>{{0, 1024}, {1024, 1}}));
}

TEST(ChunkPlan, ZeroByteTensorNeedsNoRead) {
  EXPECT_EQ(chunk_count(0, 1024), 0u);
  EXPECT_TRUE(plan_chunks(0, 1024).empty());
}

TEST(ChunkPlan, OneByteChunksCoverEveryByte) {
  const auto chunks = plan_chunks(5, 1);
  ASSERT_EQ(chunks.size(), 5u);
  for (std::uint64_t i = 0; i < 5; ++i) EXPECT_EQ(chunks[i], (Chunk{i, 1}));
}

TEST(ChunkPlan, ChunksAreContiguousAndCoverTheTensor) {
  const std::uint64_t size = 16 * 1024 * 1024 * 3 + 12345;
  const std::uint64_t chunk = 16 * 1024 * 1024;
  const auto chunks = plan_chunks(size, chunk);
  ASSERT_EQ(chunks.size(), chunk_count(size, chunk));
  std::uint64_t next = 0;
  for (const auto& c : chunks) {
    EXPECT_EQ(c.offset, next);
    EXPECT_LE(c.length, chunk);
    next += c.length;
  }
  EXPECT_EQ(next, size);
  EXPECT_EQ(chunks.back().length, 12345u);
}

}  // namespace
}  // namespace tensorstream
