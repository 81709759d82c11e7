#pragma once

#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// Throws InvalidArgument for options no stream can run with: no I/O threads, no memory, a
/// tensor-parallel size below 1 or a rank outside it, and, where set, a zero chunk size or
/// concurrency.
void check_streamer_options(const StreamerOptions& options);

}  // namespace tensorstream::detail
