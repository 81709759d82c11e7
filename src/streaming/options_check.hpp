#pragma once

#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// The most reads in flight a stream takes: each is a coroutine and a connection's worth of
/// state, and beyond a few thousand they only queue behind the per-host connection limit
/// (HttpOptions::max_connections_limit).
inline constexpr std::size_t max_concurrency_limit = 4096;

/// The most I/O threads a stream takes: threads beyond a few per core only contend, and tens of
/// thousands take the process minutes to start and stop.
inline constexpr std::size_t max_io_threads_limit = 1024;

/// Throws InvalidArgument for options no stream can run with: no I/O threads, no memory, a
/// tensor-parallel size below 1 or a rank outside it, and, where set, a zero chunk size or
/// concurrency.
void check_streamer_options(const StreamerOptions& options);

}  // namespace tensorstream::detail
