#pragma once
/// @file
/// Records that know their own batching cost.

#include <concepts>
#include <cstddef>

namespace tensorstream {

/// A record type with `estimate_cost()`, which a DynamicBatcher uses when neither submit() nor
/// the options give a cost.
template <typename Record>
concept CostEstimator = requires(const Record& record) {
  { record.estimate_cost() } -> std::convertible_to<std::size_t>;
};

}  // namespace tensorstream
