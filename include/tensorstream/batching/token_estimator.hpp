#pragma once
/// @file
/// Records that know how many tokens they hold.

#include <concepts>
#include <cstddef>

namespace tensorstream {

/// A record type with `estimate_tokens()`, which a TokenBatcher uses when neither submit() nor
/// the options give a token count.
template <typename Record>
concept TokenEstimator = requires(const Record& record) {
  { record.estimate_tokens() } -> std::convertible_to<std::size_t>;
};

}  // namespace tensorstream
