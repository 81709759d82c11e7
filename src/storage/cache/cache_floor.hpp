#pragma once
// The floor of free space a cache keeps, as the environment gives it.

#include <optional>

#include "tensorstream/storage/cache_options.hpp"

namespace tensorstream::detail {

/// TENSORSTREAM_CACHE_MIN_FREE (or its FLYTE_MODEL_LOADER_ twin), nullopt when unset.
/// @throws InvalidArgument naming the variable and its value when it is no floor.
std::optional<CacheFloor> environment_cache_floor();

}  // namespace tensorstream::detail
