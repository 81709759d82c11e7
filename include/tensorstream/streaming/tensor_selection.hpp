#pragma once
/// @file
/// Choosing tensors by name with shell-style patterns.

#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// A StreamerOptions::select that takes the tensors whose names match one of `include` (all when
/// it is empty) and none of `exclude`. Patterns are shell globs as fnmatch(3) reads them: `*`
/// matches any run of characters, dots included (`model.layers.*.mlp.*`), `?` one character,
/// `[...]` one of a set. Unset (an empty function) when both lists are empty, so that a stream
/// without patterns does no matching at all.
/// @throws InvalidArgument for an empty pattern.
TENSORSTREAM_API
TensorSelection select_by_name(std::vector<std::string> include, std::vector<std::string> exclude);

}  // namespace tensorstream
