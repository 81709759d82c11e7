#pragma once
// Keep-alive connections to one server, shared by all requests of a store.

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "storage/http/connection.hpp"

namespace tensorstream {

/// Hands out idle connections and takes them back. Thread-safe; a connection belongs to whoever
/// acquired it until release().
class ConnectionPool {
 public:
  /// A pool for `server`, which must outlive it, keeping at most `max_idle` idle connections.
  ConnectionPool(boost::asio::any_io_executor executor, const ServerAddress& server,
                 std::size_t max_idle);

  /// The most recently used idle connection (the one least likely to have been closed by the
  /// server), or a new unopened one when none is idle or `fresh` is set.
  std::unique_ptr<Connection> acquire(bool fresh);

  /// Keeps `connection` for the next request if it is open, reusable and the pool has room;
  /// closes it otherwise.
  void release(std::unique_ptr<Connection> connection);

 private:
  boost::asio::any_io_executor executor_;
  const ServerAddress& server_;
  std::size_t max_idle_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;
};

}  // namespace tensorstream
