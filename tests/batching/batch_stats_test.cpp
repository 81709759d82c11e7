#include "tensorstream/batching/batch_stats.hpp"

#include <gtest/gtest.h>

namespace tensorstream {
namespace {

TEST(BatchStats, UtilizationIsBusyOverBusyPlusIdle) {
  BatchStats stats;
  stats.busy_time_s = 3.0;
  stats.idle_time_s = 1.0;
  EXPECT_DOUBLE_EQ(stats.utilization(), 0.75);
}

TEST(BatchStats, UtilizationIsZeroWithoutTime) {
  const BatchStats stats;
  EXPECT_EQ(stats.utilization(), 0.0);
}

}  // namespace
}  // namespace tensorstream
