#include "tensorstream/batching/detail/latency_histogram.hpp"

#include <gtest/gtest.h>

#include <chrono>

namespace tensorstream::detail {
namespace {

using std::chrono::nanoseconds;

TEST(LatencyHistogram, EmptyHistogramReportsZero) {
  const LatencyHistogram histogram;
  EXPECT_EQ(histogram.count(), 0u);
  EXPECT_EQ(histogram.percentile(0.5), nanoseconds(0));
}

TEST(LatencyHistogram, SmallValuesAreExact) {
  LatencyHistogram histogram;
  for (int ns = 1; ns <= 20; ++ns) {
    histogram.record(nanoseconds(ns));
  }
  EXPECT_EQ(histogram.percentile(0.5), nanoseconds(10));
  EXPECT_EQ(histogram.percentile(1.0), nanoseconds(20));
  EXPECT_EQ(histogram.percentile(0.0), nanoseconds(1));
}

TEST(LatencyHistogram, PercentilesAreWithinThreePercent) {
  LatencyHistogram histogram;
  // 1 us .. 1000 us, one sample each: p50 is 500 us, p99 is 990 us.
  for (int us = 1; us <= 1000; ++us) {
    histogram.record(std::chrono::microseconds(us));
  }
  const auto p50 = static_cast<double>(histogram.percentile(0.50).count());
  const auto p99 = static_cast<double>(histogram.percentile(0.99).count());
  EXPECT_GE(p50, 500'000.0);
  EXPECT_LE(p50, 500'000.0 * 1.032);
  EXPECT_GE(p99, 990'000.0);
  EXPECT_LE(p99, 990'000.0 * 1.032);
  EXPECT_EQ(histogram.percentile(1.0), std::chrono::microseconds(1000));
}

TEST(LatencyHistogram, NegativeDurationsCountAsZeroAndHugeOnesFit) {
  LatencyHistogram histogram;
  histogram.record(nanoseconds(-5));
  histogram.record(nanoseconds(std::chrono::nanoseconds::max()));
  EXPECT_EQ(histogram.count(), 2u);
  EXPECT_EQ(histogram.percentile(0.5), nanoseconds(0));
  EXPECT_EQ(histogram.percentile(1.0), nanoseconds::max());
}

}  // namespace
}  // namespace tensorstream::detail
