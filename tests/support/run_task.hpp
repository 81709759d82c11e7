#pragma once
// Driving a store's coroutines to completion from a plain test body.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstdint>
#include <span>
#include <string>

#include "tensorstream/storage/object_store.hpp"

namespace tensorstream::testing {

/// Runs `task` on `io` until it finishes and returns its result; rethrows what it threw. `io`
/// may have run before.
template <class T>
T run_task(boost::asio::io_context& io, boost::asio::awaitable<T> task) {
  auto future = boost::asio::co_spawn(io, std::move(task), boost::asio::use_future);
  io.restart();
  io.run();
  return future.get();
}

/// Runs `task` to completion on a fresh io_context.
template <class T>
T run_task(boost::asio::awaitable<T> task) {
  boost::asio::io_context io;
  return run_task(io, std::move(task));
}

/// The `size` bytes at `offset` of `key` in `store`, read by running `io`.
inline std::string read_string(boost::asio::io_context& io, ObjectStore& store,
                               const std::string& key, std::uint64_t offset, std::size_t size) {
  std::string bytes(size, '\0');
  run_task(io, store.read_range(key, offset, std::as_writable_bytes(std::span(bytes))));
  return bytes;
}

}  // namespace tensorstream::testing
