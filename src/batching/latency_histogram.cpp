#include "tensorstream/batching/detail/latency_histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace tensorstream::detail {

unsigned LatencyHistogram::bucket_of(std::uint64_t value) noexcept {
  if (value < sub_buckets) {
    return static_cast<unsigned>(value);
  }
  // Group g >= 1 holds [32 << (g - 1), 32 << g) in 32 equal steps.
  const unsigned top_bit = static_cast<unsigned>(std::bit_width(value)) - 1;
  const unsigned shift = top_bit - sub_bucket_bits;
  return (shift + 1) * sub_buckets + static_cast<unsigned>((value >> shift) - sub_buckets);
}

std::uint64_t LatencyHistogram::upper_bound_of(unsigned bucket) noexcept {
  if (bucket < sub_buckets) {
    return bucket;
  }
  const unsigned shift = bucket / sub_buckets - 1;
  const std::uint64_t step = std::uint64_t{1} << shift;
  const std::uint64_t lower = (std::uint64_t{sub_buckets} + bucket % sub_buckets) << shift;
  return lower + (step - 1);
}

void LatencyHistogram::record(std::chrono::nanoseconds value) noexcept {
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(value.count(), 0));
  ++counts_[bucket_of(ns)];
  ++count_;
  max_ = std::max(max_, ns);
}

std::chrono::nanoseconds LatencyHistogram::percentile(double q) const noexcept {
  if (count_ == 0) {
    return std::chrono::nanoseconds(0);
  }
  const double clamped = std::clamp(q, 0.0, 1.0);
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(clamped * static_cast<double>(count_))));
  std::uint64_t seen = 0;
  for (unsigned bucket = 0; bucket < bucket_count; ++bucket) {
    seen += counts_[bucket];
    if (seen >= rank) {
      return std::chrono::nanoseconds(
          static_cast<std::int64_t>(std::min(upper_bound_of(bucket), max_)));
    }
  }
  return std::chrono::nanoseconds(static_cast<std::int64_t>(max_));
}

}  // namespace tensorstream::detail
