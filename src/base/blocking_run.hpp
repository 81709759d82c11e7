#pragma once
// The library's blocking calls (prefetch_blocking, partition_checkpoint_blocking, ...) run their
// coroutines here, where a program that handles SIGINT or SIGTERM can cancel them all at once.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

namespace tensorstream::detail {

/// Runs `work` on `io` until it finishes, then returns or rethrows its exception. The run ends
/// when the work does rather than when `io` runs out of work: a store may keep work of its own
/// pending. interrupt_blocking_runs() cancels it (terminal cancellation).
void run_blocking(boost::asio::io_context& io, boost::asio::awaitable<void> work);

/// Cancels every run_blocking in progress, as cancelling a coroutine does: its writers abort, so
/// temporaries are removed and multipart uploads aborted before the run rethrows. Every later
/// run_blocking throws operation_aborted before it starts. Returns whether a run was in progress.
/// Thread-safe (not async-signal-safe: call it from a thread that waits for the signal).
bool interrupt_blocking_runs();

}  // namespace tensorstream::detail
