#pragma once
/// @file
/// What a batcher has done so far, for logs, dashboards and tuning.

#include <cstdint>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// A snapshot of a batcher's counters, cumulative since construction (they survive restarts).
///
/// A record is *completed* once the process function was called with it, whatever the outcome;
/// cancelled and expired records never reach it and are counted on their own.
struct TENSORSTREAM_API BatchStats {
  std::uint64_t total_submitted = 0;   ///< Records accepted by submit() or submit_batch().
  std::uint64_t total_completed = 0;   ///< Records passed to the process function.
  std::uint64_t total_batches = 0;     ///< Calls of the process function.
  std::uint64_t total_batch_cost = 0;  ///< Sum of the estimated costs of completed records.
  double avg_batch_size = 0;           ///< total_completed / total_batches; 0 before any batch.
  double avg_batch_cost = 0;           ///< total_batch_cost / total_batches; 0 before any batch.
  double busy_time_s = 0;   ///< Seconds processing loops spent in the process function, summed.
  double idle_time_s = 0;   ///< Seconds processing loops spent waiting for a batch, summed.
  std::uint64_t total_failed = 0;     ///< Completed records whose batch failed.
  std::uint64_t total_cancelled = 0;  ///< Records cancelled before dispatch.
  std::uint64_t total_expired = 0;    ///< Records whose deadline passed before dispatch.
  /// Batches that reached batch_timeout below min_batch_size and were held for more records,
  /// each counted once.
  std::uint64_t total_held = 0;
  double queue_wait_p50_s = 0;  ///< Median seconds from submit() to dispatch, within ~3%.
  double queue_wait_p99_s = 0;  ///< 99th percentile of the same.

  /// busy / (busy + idle): the share of time the processing loops were working; 0 when both
  /// are 0.
  double utilization() const noexcept;
};

}  // namespace tensorstream
