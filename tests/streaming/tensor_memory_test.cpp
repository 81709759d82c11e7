#include "streaming/tensor_memory.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "support/units.hpp"

namespace tensorstream::detail {
namespace {

using testing::MiB;

struct Pool {
  std::shared_ptr<MemoryBudget> budget;
  std::shared_ptr<TensorMemoryPool> pool;

  explicit Pool(std::uint64_t limit)
      : budget(std::make_shared<MemoryBudget>(limit)),
        pool(std::make_shared<TensorMemoryPool>(budget)) {}

  std::shared_ptr<std::byte> allocate(std::uint64_t bytes, std::uint64_t page_offset = 0) {
    EXPECT_TRUE(budget->try_acquire(bytes));
    return pool->allocate(bytes, page_offset);
  }
};

TEST(TensorMemoryPool, ReleasedMappingIsReusedForATensorOfTheSameSize) {
  Pool p(16 * MiB);
  auto first = p.allocate(2 * MiB);
  std::memset(first.get(), 1, 2 * MiB);
  std::byte* address = first.get();
  first.reset();
  EXPECT_EQ(p.budget->used(), 0u);
  EXPECT_EQ(p.pool->kept_bytes(), 2 * MiB);
  auto second = p.allocate(2 * MiB);
  EXPECT_EQ(second.get(), address);
  EXPECT_EQ(p.pool->kept_bytes(), 0u);
}

// No kept mapping is large enough: their pages are moved side by side into the new one, the
// largest first, and none is fresh.
TEST(TensorMemoryPool, ALargerTensorIsMadeOfKeptMappingsWithoutFreshPages) {
  Pool p(8 * MiB);
  {
    auto a = p.allocate(3 * MiB);
    std::memset(a.get(), 0x11, 3 * MiB);
    auto b = p.allocate(4 * MiB);
    std::memset(b.get(), 0x22, 4 * MiB);
  }
  EXPECT_EQ(p.pool->kept_bytes(), 7 * MiB);
  EXPECT_EQ(p.pool->fresh_bytes(), 7 * MiB);
  auto glued = p.allocate(6 * MiB);
  EXPECT_EQ(p.pool->fresh_bytes(), 7 * MiB) << "no page of the 6 MiB is fresh";
  EXPECT_EQ(glued.get()[0], std::byte{0x22});
  EXPECT_EQ(glued.get()[4 * MiB - 1], std::byte{0x22});
  EXPECT_EQ(glued.get()[4 * MiB], std::byte{0x11});
  EXPECT_EQ(glued.get()[6 * MiB - 1], std::byte{0x11});
  EXPECT_EQ(p.pool->kept_bytes(), 1 * MiB) << "the 3 MiB mapping's tail stays kept";
  std::memset(glued.get(), 1, 6 * MiB);
  auto more = p.allocate(2 * MiB);
  EXPECT_EQ(p.pool->fresh_bytes(), 8 * MiB) << "the kept 1 MiB, and 1 MiB fresh";
}

TEST(TensorMemoryPool, ASmallerTensorTakesTheHeadOfAKeptMappingAndTheTailStaysKept) {
  Pool p(16 * MiB);
  auto big = p.allocate(6 * MiB);
  std::byte* address = big.get();
  big.reset();
  auto small = p.allocate(2 * MiB);
  EXPECT_EQ(small.get(), address);
  EXPECT_EQ(p.pool->kept_bytes(), 4 * MiB);
  auto rest = p.allocate(4 * MiB);
  EXPECT_EQ(rest.get(), address + 2 * MiB);
  EXPECT_EQ(p.pool->kept_bytes(), 0u);
}

TEST(TensorMemoryPool, ALargerTensorGrowsAKeptMappingKeepingItsBytes) {
  Pool p(16 * MiB);
  auto first = p.allocate(2 * MiB);
  std::memset(first.get(), 0x5a, 2 * MiB);
  first.reset();
  auto grown = p.allocate(5 * MiB);
  EXPECT_EQ(p.pool->kept_bytes(), 0u);
  EXPECT_EQ(grown.get()[2 * MiB - 1], std::byte{0x5a}) << "the kept pages were reused";
  EXPECT_EQ(p.pool->fresh_bytes(), 5 * MiB) << "2 MiB, then the 3 MiB the kept pages lacked";
  std::memset(grown.get(), 1, 5 * MiB);
}

// Kept memory is bounded by the limit on its own: a consumer's tensors, released while the stream
// holds its limit's worth, are kept for the stream's next tensors.
TEST(TensorMemoryPool, DetachedMemoryLeavesTheBudgetAtOnceAndKeptMemoryStaysWithinTheLimit) {
  Pool p(8 * MiB);
  auto a = p.allocate(3 * MiB);
  auto b = p.allocate(4 * MiB);
  p.pool->detach(a);
  p.pool->detach(a);
  EXPECT_EQ(p.budget->used(), 4 * MiB) << "detached once, however often asked";
  p.pool->detach(b);
  auto c = p.allocate(5 * MiB);
  EXPECT_EQ(p.budget->used(), 5 * MiB);
  b.reset();
  EXPECT_EQ(p.budget->used(), 5 * MiB) << "a detached release gives nothing back twice";
  EXPECT_EQ(p.pool->kept_bytes(), 4 * MiB);
  a.reset();
  EXPECT_EQ(p.pool->kept_bytes(), 7 * MiB);
  c.reset();
  EXPECT_EQ(p.budget->used(), 0u);
  EXPECT_EQ(p.pool->kept_bytes(), 7 * MiB) << "5 MiB more would exceed 8 MiB: unmapped";
}

TEST(TensorMemoryPool, DetachIgnoresMemoryThatIsNotThePools) {
  Pool p(8 * MiB);
  std::byte outside[16];
  const std::shared_ptr<std::byte> placed(outside, [](std::byte*) {});
  p.pool->detach(placed);
  auto a = p.allocate(2 * MiB);
  Pool other(8 * MiB);
  other.pool->detach(a);
  EXPECT_EQ(p.budget->used(), 2 * MiB);
}

TEST(TensorMemoryPool, MemoryIsAlignedAndZeroBytesGetAPointer) {
  Pool p(8 * MiB);
  for (std::uint64_t bytes : {std::uint64_t{1}, std::uint64_t{100}, 3 * MiB}) {
    auto memory = p.allocate(bytes);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(memory.get()) % 64, 0u) << bytes;
  }
  EXPECT_NE(p.allocate(0).get(), nullptr);
}

// Where a direct read of a file is to land in place, memory sits as far past a page boundary as
// the file offset of its first byte; its mapping is a page larger, and recycled all the same.
TEST(TensorMemoryPool, MemoryForDirectReadsSitsAsFarPastAPageBoundaryAsAskedAndIsRecycled) {
  Pool p(8 * MiB);
  auto memory = p.allocate(3 * MiB, 100);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(memory.get()) % 4096, 100u);
  std::memset(memory.get(), 1, 3 * MiB);
  EXPECT_EQ(p.pool->fresh_bytes(), 3 * MiB + 4096);
  memory.reset();
  EXPECT_EQ(p.pool->kept_bytes(), 3 * MiB + 4096);
  auto again = p.allocate(3 * MiB, 4000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(again.get()) % 4096, 4000u);
  EXPECT_EQ(again.get()[0], std::byte{1}) << "the kept pages were reused";
  EXPECT_EQ(p.pool->fresh_bytes(), 3 * MiB + 4096);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p.allocate(100, 8).get()) % 64, 0u)
      << "small memory comes from malloc, 64-byte aligned";
}

// A stream whose tensors fill the limit between them keeps all of them, though their mappings
// add a page each to the bytes the budget counts.
TEST(TensorMemoryPool, KeptMemoryMayExceedTheLimitByWhatMappingsAddToIt) {
  Pool p(8 * MiB);
  std::vector<std::shared_ptr<std::byte>> tensors;
  for (int i = 0; i < 4; ++i) tensors.push_back(p.allocate(2 * MiB, 8));
  tensors.clear();
  EXPECT_EQ(p.pool->kept_bytes(), 8 * MiB + 4 * 4096);
  auto larger = p.allocate(5 * MiB);
  auto fill = p.allocate(3 * MiB);
  larger.reset();
  fill.reset();
  EXPECT_LE(p.pool->kept_bytes(), 8 * MiB + 8 * MiB / 64);
}

TEST(TensorMemoryPool, ReleasesAfterCloseUnmapAtOnce) {
  Pool p(8 * MiB);
  auto memory = p.allocate(2 * MiB);
  p.pool->close();
  memory.reset();
  EXPECT_EQ(p.pool->kept_bytes(), 0u);
  EXPECT_EQ(p.budget->used(), 0u);
}

}  // namespace
}  // namespace tensorstream::detail
