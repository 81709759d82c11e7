#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "streaming/read_job.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/distributed/broadcast_group.hpp"

namespace tensorstream::detail {

/// Read once, broadcast to all: takes a distributed stream's reads in plan order and broadcasts
/// each from the member that owns it, once its bytes are here (on the owner) or its memory is
/// (on a receiver), with at most max_in_flight pending. A stream alone in its group has none of
/// this: its reads are delivered where they land.
///
/// Runs on the stream's strand. Broadcasts complete on the group's threads and may do so after
/// the stream failed, or after the stream is gone: their jobs, and with them the memory the
/// bytes land in, stay alive until then, and drain() waits for them before the stream lets its
/// destination go.
class BroadcastDistribution {
 public:
  /// Broadcasts in flight at once: enough to keep the group busy while reads land, few enough
  /// that memory goes back to the budget in plan order.
  static constexpr std::size_t max_in_flight = 4;

  /// Called on the strand with a job whose bytes are all here; `fetched`: read by this member
  /// rather than received.
  using Deliver = std::function<void(ReadJob& job, bool fetched)>;

  /// `owner` is what a completion keeps alive while it is posted to `strand` (and, once it is
  /// gone, the completion is dropped); nullopt where the strand's threads are joined before this
  /// object goes, so that nothing need be kept.
  BroadcastDistribution(std::shared_ptr<BroadcastGroup> group,
                        boost::asio::strand<boost::asio::any_io_executor> strand,
                        std::string remote_path, Deliver deliver,
                        std::optional<std::weak_ptr<void>> owner);

  /// Drops completions from here on; they are still counted for drain().
  ~BroadcastDistribution();
  BroadcastDistribution(const BroadcastDistribution&) = delete;
  BroadcastDistribution& operator=(const BroadcastDistribution&) = delete;

  /// Queues `job` (with its owner and readiness set) behind those queued before it.
  void add(std::shared_ptr<ReadJob> job);

  /// The owner's bytes of `job` have all landed here.
  void ready(ReadJob& job);

  /// No more jobs will be added.
  void planned_all();

  /// Broadcasts every job, in order; ends when all have completed, and throws on the first
  /// failure (this member's or the group's).
  boost::asio::awaitable<void> run();

  /// The stream's run is over: completions from here on change nothing.
  void end();

  /// Whether the failure run() threw came from the group, which then already knows of it.
  bool failed_in_group() const { return failed_in_group_; }

  /// Waits up to `timeout` for every broadcast started to complete; returns how many have not.
  /// Any thread.
  std::size_t drain(std::chrono::milliseconds timeout);

 private:
  class Sink;

  void completed(ReadJob& job, const BroadcastGroup::Outcome& outcome);

  const std::shared_ptr<BroadcastGroup> group_;
  const boost::asio::strand<boost::asio::any_io_executor> strand_;
  const std::string remote_path_;
  const Deliver deliver_;
  const std::shared_ptr<Sink> sink_;

  // Touched only on the strand.
  std::deque<std::shared_ptr<ReadJob>> outgoing_;
  async::ConditionVariable changed_;
  std::size_t in_flight_ = 0;
  std::exception_ptr failure_;
  bool failed_in_group_ = false;
  bool planned_all_ = false;
  bool over_ = false;
};

}  // namespace tensorstream::detail
