#pragma once
/// @file
/// A fixed-size histogram of durations for percentile estimates.

#include <array>
#include <chrono>
#include <cstdint>

#include "tensorstream/export.hpp"

namespace tensorstream::detail {

/// Counts durations in log-linear buckets: exact below 32 ns, then 32 buckets per power of two,
/// so a reported percentile is within about 3% of the true value, for any range up to 584 years,
/// in constant memory. Not thread-safe.
class TENSORSTREAM_API LatencyHistogram {
 public:
  /// Adds one sample; negative durations count as zero.
  void record(std::chrono::nanoseconds value) noexcept;

  /// The smallest bucket bound at or above a fraction `q` (0..1) of the samples, clamped to the
  /// largest sample; zero when empty.
  std::chrono::nanoseconds percentile(double q) const noexcept;

  /// Samples recorded.
  std::uint64_t count() const noexcept { return count_; }

 private:
  static constexpr unsigned sub_bucket_bits = 5;
  static constexpr unsigned sub_buckets = 1u << sub_bucket_bits;
  static constexpr unsigned bucket_count = (64 - sub_bucket_bits + 1) * sub_buckets;

  static unsigned bucket_of(std::uint64_t value) noexcept;
  static std::uint64_t upper_bound_of(unsigned bucket) noexcept;

  std::array<std::uint64_t, bucket_count> counts_{};
  std::uint64_t count_ = 0;
  std::uint64_t max_ = 0;
};

}  // namespace tensorstream::detail
