#pragma once
// A StoreServer run by a thread of its own, for tests that attach to it as workers do.

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <filesystem>
#include <future>
#include <optional>
#include <string>
#include <thread>

#include "tensorstream/store/store_server.hpp"

namespace tensorstream::store::testing {

/// Serves `source` as `options` say (the socket in `options.socket.path`) from construction until
/// destruction; loading starts with start_loading().
class ServedModel {
 public:
  ServedModel(std::string source, StoreServerOptions options)
      : work_(boost::asio::make_work_guard(io_)) {
    server_.emplace(io_.get_executor(), std::move(source), std::move(options));
    thread_ = std::thread([this] { io_.run(); });
  }

  ~ServedModel() {
    stop();
    if (loaded_.valid()) loaded_.wait();
    boost::asio::post(io_, [this] { server_.reset(); });
    work_.reset();
    thread_.join();
  }

  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  /// Starts StoreServer::load().
  void start_loading() {
    loaded_ = boost::asio::co_spawn(io_, server_->load(), boost::asio::use_future);
  }

  /// Loads and waits for every rank; rethrows what load() threw.
  void load() {
    start_loading();
    wait_loaded();
  }

  /// Waits for the load start_loading() began; rethrows what it threw.
  void wait_loaded() { loaded_.get(); }

  /// StoreServer::reload(source), started; get() the future for its outcome.
  std::future<ReloadOutcome> start_reload(std::string source = {}) {
    return boost::asio::co_spawn(io_, server_->reload(std::move(source)), boost::asio::use_future);
  }

  /// StoreServer::reload(source), waited for; rethrows what it threw.
  ReloadOutcome reload(std::string source = {}) { return start_reload(std::move(source)).get(); }

  /// StoreServer::stop(), waited for.
  void stop() { boost::asio::co_spawn(io_, server_->stop(), boost::asio::use_future).get(); }

  /// The server's status reply.
  std::string status() {
    return boost::asio::co_spawn(io_, server_->status(), boost::asio::use_future).get();
  }

  const std::filesystem::path& socket() const { return server_->socket_path(); }

 private:
  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::optional<StoreServer> server_;
  std::future<void> loaded_;
  std::thread thread_;
};

}  // namespace tensorstream::store::testing
