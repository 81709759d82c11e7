#pragma once
/// @file
/// A text prompt, the usual record of a TokenBatcher.

#include <cstddef>
#include <string>
#include <utility>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// A prompt for an LLM endpoint; satisfies TokenEstimator.
///
/// Not an aggregate on purpose: GCC 12 miscompiles an aggregate temporary with non-trivial
/// members created inside a `co_await` expression (it is copied bitwise), which is exactly how
/// `co_await batcher.submit(Prompt{"..."})` reads.
struct TENSORSTREAM_API Prompt {
  /// An empty prompt.
  Prompt() = default;
  /// A prompt with `text`.
  explicit Prompt(std::string text) noexcept : text(std::move(text)) {}

  std::string text;  ///< The prompt text (UTF-8).

  /// A rough token count, `text.size() / 4 + 1` (bytes, not characters). Not tokenizer-backed:
  /// give submit() an explicit count or the batcher a token estimator when the limit matters.
  std::size_t estimate_tokens() const noexcept;
};

}  // namespace tensorstream
