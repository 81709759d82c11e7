#include "support/local_group.hpp"

#include <cstring>
#include <stdexcept>
#include <utility>

namespace tensorstream::testing {

class LocalGroup::Member final : public BroadcastGroup {
 public:
  Member(LocalGroup& group, int rank) : group_(group), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return group_.size_; }
  void broadcast(std::span<std::byte> bytes, int root, Completion done) override {
    group_.broadcast(rank_, bytes, root, std::move(done));
  }
  std::vector<std::string> all_gather(const std::string& mine) override {
    return group_.all_gather(rank_, mine);
  }
  void report_failure(const std::string& message) override {
    group_.report_failure(rank_, message);
  }

 private:
  LocalGroup& group_;
  const int rank_;
};

LocalGroup::LocalGroup(int size, Failures failures)
    : size_(size), failures_(failures), next_broadcast_(static_cast<std::size_t>(size), 0),
      next_gather_(static_cast<std::size_t>(size), 0) {}

std::shared_ptr<BroadcastGroup> LocalGroup::member(int rank) {
  return std::make_shared<Member>(*this, rank);
}

void LocalGroup::broadcast(int rank, std::span<std::byte> bytes, int root,
                           BroadcastGroup::Completion done) {
  std::unique_lock lock(mutex_);
  if (failure_) {
    const Outcome outcome = *failure_;
    lock.unlock();
    done(outcome);
    return;
  }
  const std::uint64_t id = next_broadcast_[static_cast<std::size_t>(rank)]++;
  Broadcast& op = broadcasts_[id];
  if (op.started == 0) {
    op.buffers.resize(static_cast<std::size_t>(size_));
    op.done.resize(static_cast<std::size_t>(size_));
    op.root = root;
    op.length = bytes.size();
  } else if (op.root != root || op.length != bytes.size()) {
    // The members' schedules differ: a bug of the stream's this group exists to catch.
    throw std::logic_error("members started broadcast " + std::to_string(id) +
                           " with different roots or lengths");
  }
  op.buffers[static_cast<std::size_t>(rank)] = bytes;
  op.done[static_cast<std::size_t>(rank)] = std::move(done);
  changed_.notify_all();
  if (++op.started < size_) return;
  Broadcast complete = std::move(op);
  broadcasts_.erase(id);
  ++completed_;
  lock.unlock();
  const auto source = complete.buffers[static_cast<std::size_t>(complete.root)];
  for (int r = 0; r < size_; ++r) {
    auto target = complete.buffers[static_cast<std::size_t>(r)];
    if (r != complete.root) std::memcpy(target.data(), source.data(), source.size());
  }
  for (auto& completion : complete.done) completion(Outcome{});
}

std::vector<std::string> LocalGroup::all_gather(int rank, const std::string& mine) {
  std::unique_lock lock(mutex_);
  const std::uint64_t id = next_gather_[static_cast<std::size_t>(rank)]++;
  Gather& gather = gathers_[id];
  if (gather.values.empty()) gather.values.resize(static_cast<std::size_t>(size_));
  gather.values[static_cast<std::size_t>(rank)] = mine;
  ++gather.given;
  changed_.notify_all();
  changed_.wait(lock, [&] { return failure_ || gathers_[id].given == size_; });
  if (failure_ && gathers_[id].given < size_) throw std::runtime_error(failure_->failure);
  std::vector<std::string> values;
  for (const auto& value : gathers_[id].values) values.push_back(*value);
  return values;
}

void LocalGroup::report_failure(int rank, const std::string& message) {
  std::unique_lock lock(mutex_);
  if (!failure_) fail_locked(lock, Outcome{false, message, rank});
}

void LocalGroup::lose(int rank) {
  std::unique_lock lock(mutex_);
  if (!failure_) {
    fail_locked(lock, Outcome{false, "connection to rank " + std::to_string(rank) + " lost", -1});
  }
}

void LocalGroup::fail_locked(std::unique_lock<std::mutex>& lock, Outcome outcome) {
  failure_ = outcome;
  std::vector<BroadcastGroup::Completion> pending;
  std::vector<BroadcastGroup::Completion*> early;
  const std::size_t landed_before = landing_.size();
  for (auto& [id, op] : broadcasts_) {
    if (failures_ == Failures::complete_early) {
      landing_.push_back(std::move(op));
    } else {
      for (auto& done : op.done) {
        if (done) pending.push_back(std::move(done));
      }
    }
  }
  for (std::size_t i = landed_before; i < landing_.size(); ++i) {
    for (auto& done : landing_[i].done) {
      if (done) early.push_back(&done);
    }
  }
  broadcasts_.clear();
  changed_.notify_all();
  lock.unlock();
  for (auto& done : pending) done(outcome);
  // landing_ only grows under the lock, and land_late() is the test's, after the streams.
  for (auto* done : early) (*done)(outcome);
  lock.lock();
}

void LocalGroup::land_late() {
  std::vector<Broadcast> landing;
  {
    std::lock_guard lock(mutex_);
    landing.swap(landing_);
  }
  for (const Broadcast& op : landing) {
    for (int r = 0; r < size_; ++r) {
      const auto target = op.buffers[static_cast<std::size_t>(r)];
      if (r != op.root && !target.empty()) std::memset(target.data(), 0xee, target.size());
    }
  }
}

void LocalGroup::wait_pending(int rank) {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] {
    for (const auto& [id, op] : broadcasts_) {
      if (op.done[static_cast<std::size_t>(rank)]) return true;
    }
    return false;
  });
}

std::uint64_t LocalGroup::broadcasts() const {
  std::lock_guard lock(mutex_);
  return completed_;
}

}  // namespace tensorstream::testing
