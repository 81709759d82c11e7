#pragma once
/// @file
/// Per-request settings of a batcher's submit().

#include <chrono>
#include <cstddef>
#include <optional>

namespace tensorstream {

/// Settings for one submitted record.
struct SubmitOptions {
  /// The record's cost (tokens, for a TokenBatcher); overrides every estimator when set.
  std::optional<std::size_t> estimated_cost{};
  /// If the record has not been dispatched by then, its future fails with DeadlineExceeded and
  /// the process function never sees it.
  std::optional<std::chrono::steady_clock::time_point> deadline{};
};

}  // namespace tensorstream
