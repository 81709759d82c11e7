#include "storage/http/connection_pool.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <utility>

namespace tensorstream {

namespace asio = boost::asio;

ConnectionPool::ConnectionPool(const asio::any_io_executor& executor, Factory make,
                               std::size_t max_in_use, std::size_t max_idle)
    : make_(std::move(make)),
      max_idle_(max_idle),
      in_use_(executor, std::max<std::size_t>(max_in_use, 1)) {}

asio::awaitable<std::unique_ptr<Connection>> ConnectionPool::acquire(bool fresh) {
  if (!in_use_.try_send(boost::system::error_code{})) {
    auto [ec] = co_await in_use_.async_send(boost::system::error_code{},
                                            asio::as_tuple(asio::use_awaitable));
    if (ec) throw boost::system::system_error(asio::error::operation_aborted);
  }
  co_return take(fresh);
}

std::unique_ptr<Connection> ConnectionPool::take(bool fresh) {
  if (!fresh) {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      auto connection = std::move(idle_.back());
      idle_.pop_back();
      return connection;
    }
  }
  return make_();
}

void ConnectionPool::release(std::unique_ptr<Connection> connection) {
  if (connection->reusable() && connection->is_open()) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(connection));
  }
  // Closes an unkept connection before a waiter may open its replacement.
  connection.reset();
  in_use_.try_receive([](boost::system::error_code) {});
}

}  // namespace tensorstream
