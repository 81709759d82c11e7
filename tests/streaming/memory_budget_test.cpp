#include "tensorstream/streaming/memory_budget.hpp"

#include <gtest/gtest.h>

#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

TEST(MemoryBudget, GrantsUpToTheLimitAndNoMore) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.try_acquire(60));
  EXPECT_TRUE(budget.try_acquire(40));
  EXPECT_FALSE(budget.try_acquire(1));
  EXPECT_EQ(budget.used(), 100u);
  budget.release(30);
  EXPECT_FALSE(budget.fits(31));
  EXPECT_TRUE(budget.try_acquire(30));
  EXPECT_EQ(budget.peak(), 100u);
}

TEST(MemoryBudget, OversizedRequestIsGrantedOnlyWhenNothingIsHeld) {
  MemoryBudget budget(100);
  EXPECT_TRUE(budget.try_acquire(1));
  EXPECT_FALSE(budget.try_acquire(500));
  budget.release(1);
  EXPECT_TRUE(budget.try_acquire(500));
  EXPECT_EQ(budget.peak(), 500u);
  EXPECT_FALSE(budget.try_acquire(1));
}

TEST(MemoryBudget, ReleaseCallsTheListenerUntilItIsCleared) {
  MemoryBudget budget(10);
  int calls = 0;
  budget.set_release_listener([&] { ++calls; });
  ASSERT_TRUE(budget.try_acquire(5));
  budget.release(5);
  EXPECT_EQ(calls, 1);
  budget.set_release_listener({});
  ASSERT_TRUE(budget.try_acquire(5));
  budget.release(5);
  EXPECT_EQ(calls, 1);
}

TEST(MemoryBudget, ZeroLimitIsRejected) {
  EXPECT_THROW(MemoryBudget(0), InvalidArgument);
}

}  // namespace
}  // namespace tensorstream
