#include "streaming/broadcast_distribution.hpp"

#include <boost/asio/post.hpp>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <span>
#include <utility>

#include "streaming/group_agreement.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::detail {

namespace asio = boost::asio;

/// Where a completion, on a thread of the group's, finds the distribution, and how many
/// broadcasts may still write into their jobs' memory. Detached when the distribution goes,
/// after which completions are dropped (with the memory their jobs kept alive), though still
/// counted.
class BroadcastDistribution::Sink {
 public:
  Sink(BroadcastDistribution* target, std::optional<std::weak_ptr<void>> owner)
      : target_(target), owner_(std::move(owner)) {}

  void detach() {
    std::lock_guard lock(mutex_);
    target_ = nullptr;
  }

  /// Counts a broadcast about to start; its completion must come through complete().
  void started() {
    std::lock_guard lock(mutex_);
    ++in_flight_;
  }

  void complete(std::shared_ptr<ReadJob> job, BroadcastGroup::Outcome outcome) {
    std::lock_guard lock(mutex_);
    --in_flight_;
    idle_.notify_all();
    if (target_ == nullptr) return;
    // The handler keeps the owner, which may be on its way out (its destructor then waits for
    // this lock to detach us).
    std::shared_ptr<void> keep;
    if (owner_) {
      keep = owner_->lock();
      if (!keep) return;
    }
    asio::post(target_->strand_, [target = target_, keep = std::move(keep), job = std::move(job),
                         outcome = std::move(outcome)] { target->completed(*job, outcome); });
  }

  std::size_t wait_idle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    idle_.wait_for(lock, timeout, [this] { return in_flight_ == 0; });
    return in_flight_;
  }

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  // Reached only while attached: the strand belongs to an executor that may be gone by the
  // time the group's last completion lets this go.
  BroadcastDistribution* target_;
  const std::optional<std::weak_ptr<void>> owner_;
  std::size_t in_flight_ = 0;
};

BroadcastDistribution::BroadcastDistribution(std::shared_ptr<BroadcastGroup> group,
                                             asio::strand<asio::any_io_executor> strand,
                                             std::string remote_path, Deliver deliver,
                                             std::optional<std::weak_ptr<void>> owner)
    : group_(std::move(group)),
      strand_(std::move(strand)),
      remote_path_(std::move(remote_path)),
      deliver_(std::move(deliver)),
      sink_(std::make_shared<Sink>(this, std::move(owner))) {}

BroadcastDistribution::~BroadcastDistribution() { sink_->detach(); }

void BroadcastDistribution::add(std::shared_ptr<ReadJob> job) {
  outgoing_.push_back(std::move(job));
  changed_.notify_all();
}

void BroadcastDistribution::ready(ReadJob& job) {
  job.ready = true;
  changed_.notify_all();
}

void BroadcastDistribution::planned_all() {
  planned_all_ = true;
  changed_.notify_all();
}

asio::awaitable<void> BroadcastDistribution::run() {
  for (;;) {
    co_await changed_.wait([this] {
      return failure_ || (outgoing_.empty() && planned_all_) ||
             (!outgoing_.empty() && outgoing_.front()->ready && in_flight_ < max_in_flight);
    });
    if (failure_) std::rethrow_exception(failure_);
    if (outgoing_.empty()) break;
    std::shared_ptr<ReadJob> job = std::move(outgoing_.front());
    outgoing_.pop_front();
    ++in_flight_;
    const std::span<std::byte> bytes(job->data.get(), job->read.length);
    const int owner = job->owner;
    sink_->started();
    // The completion keeps its share of the job, and so of its memory, for as long as the group
    // keeps it: until the group's work on the bytes has ended, which can be after a failure
    // completed it.
    group_->broadcast(bytes, owner,
                      [sink = sink_, job = std::move(job)](BroadcastGroup::Outcome outcome) {
                        sink->complete(job, std::move(outcome));
                      });
  }
  co_await changed_.wait([this] { return failure_ || in_flight_ == 0; });
  if (failure_) std::rethrow_exception(failure_);
}

void BroadcastDistribution::completed(ReadJob& job, const BroadcastGroup::Outcome& outcome) {
  --in_flight_;
  changed_.notify_all();
  if (failure_ || over_) return;
  if (!outcome.ok) {
    failure_ = std::make_exception_ptr(
        Error(broadcast_failure_message(remote_path_, *group_, job.read, job.owner, outcome)));
    failed_in_group_ = true;
    return;
  }
  deliver_(job, job.owner == group_->rank());
}

void BroadcastDistribution::end() { over_ = true; }

std::size_t BroadcastDistribution::drain(std::chrono::milliseconds timeout) {
  return sink_->wait_idle(timeout);
}

}  // namespace tensorstream::detail
