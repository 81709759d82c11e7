#include "storage/http/connection_pool.hpp"

#include <utility>

namespace tensorstream {

ConnectionPool::ConnectionPool(boost::asio::any_io_executor executor, const ServerAddress& server,
                               std::size_t max_idle)
    : executor_(std::move(executor)), server_(server), max_idle_(max_idle) {}

std::unique_ptr<Connection> ConnectionPool::acquire(bool fresh) {
  if (!fresh) {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  return std::make_unique<Connection>(executor_, server_);
}

void ConnectionPool::release(std::unique_ptr<Connection> connection) {
  if (!connection->reusable() || !connection->is_open()) return;
  std::lock_guard lock(mutex_);
  if (idle_.size() < max_idle_) idle_.push_back(std::move(connection));
}

}  // namespace tensorstream
