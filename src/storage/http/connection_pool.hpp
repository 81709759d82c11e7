#pragma once
// Connections to one server, shared by all requests of a store: at most a fixed number in use at
// a time, and the idle ones kept alive for the next request.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "storage/http/connection.hpp"
#include "tensorstream/async/condition_variable.hpp"

namespace tensorstream {

/// Hands out connections and takes them back. Thread-safe; a connection belongs to whoever
/// acquired it until release().
class ConnectionPool {
 public:
  /// Makes a new, unopened connection.
  using Factory = std::function<std::unique_ptr<Connection>()>;

  /// A pool whose new connections come from `make`, with at most `max_in_use` (at least 1)
  /// acquired at a time and at most `max_idle` kept idle.
  ConnectionPool(Factory make, std::size_t max_in_use, std::size_t max_idle);

  /// The most recently used idle connection (the one least likely to have been closed by the
  /// server), or a new unopened one when none is idle or `fresh` is set. Waits while
  /// `max_in_use` connections are acquired; cancelling the wait throws
  /// boost::system::system_error(operation_aborted). Every acquired connection must be given
  /// back with release(), whatever happened to it.
  boost::asio::awaitable<std::unique_ptr<Connection>> acquire(bool fresh);

  /// Keeps `connection` for the next request if it is open, reusable and the pool has room;
  /// closes it otherwise. Wakes one request waiting in acquire().
  void release(std::unique_ptr<Connection> connection);

 private:
  Factory make_;
  std::size_t max_in_use_;
  std::size_t max_idle_;
  std::mutex mutex_;
  std::size_t in_use_ = 0;
  std::vector<std::unique_ptr<Connection>> idle_;
  async::ConditionVariable released_;
};

}  // namespace tensorstream
