#include "storage/http/connection_pool.hpp"

#include <algorithm>
#include <utility>

namespace tensorstream {

namespace asio = boost::asio;

ConnectionPool::ConnectionPool(Factory make, std::size_t max_in_use, std::size_t max_idle)
    : make_(std::move(make)), max_in_use_(std::max<std::size_t>(max_in_use, 1)), max_idle_(max_idle) {}

asio::awaitable<std::unique_ptr<Connection>> ConnectionPool::acquire(bool fresh) {
  std::unique_ptr<Connection> connection;
  {
    std::unique_lock lock(mutex_);
    co_await released_.wait(lock, [this] { return in_use_ < max_in_use_; });
    ++in_use_;
    if (!fresh && !idle_.empty()) {
      connection = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!connection) connection = make_();
  co_return connection;
}

void ConnectionPool::release(std::unique_ptr<Connection> connection) {
  if (connection->reusable() && connection->is_open()) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(connection));
  }
  // Closes an unkept connection before a waiter may open its replacement.
  connection.reset();
  std::lock_guard lock(mutex_);
  --in_use_;
  released_.notify_one();
}

}  // namespace tensorstream
