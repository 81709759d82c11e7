#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <functional>

namespace tensorstream::detail {

/// Runs `task(0)` … `task(count - 1)` as concurrent coroutines on the caller's executor (a strand,
/// or any single-threaded executor) and returns when all have finished.
///
/// The first task to throw cancels the others; the caller's own cancellation is forwarded to all
/// of them. Either way every task has finished before this returns, so tasks may safely refer to
/// the caller's locals. Then the first error is rethrown (or operation_aborted, when the caller was
/// cancelled and no task failed).
boost::asio::awaitable<void> run_concurrently(
    std::size_t count, std::function<boost::asio::awaitable<void>(std::size_t)> task);

}  // namespace tensorstream::detail
