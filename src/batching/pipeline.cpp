#include "tensorstream/batching/detail/pipeline.hpp"

#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <iterator>
#include <limits>
#include <utility>

namespace asio = boost::asio;

namespace tensorstream::detail {
namespace {

std::size_t saturating_add(std::size_t a, std::size_t b) {
  return b > std::numeric_limits<std::size_t>::max() - a ? std::numeric_limits<std::size_t>::max()
                                                           : a + b;
}

void require_positive(const std::string& name, const char* option, std::size_t value) {
  if (value == 0) {
    throw InvalidArgument(name + ": " + option + " must be at least 1");
  }
}

}  // namespace

Pipeline::Pipeline(asio::any_io_executor executor, PipelineLimits limits, std::string name)
    : executor_(std::move(executor)), limits_(limits), name_(std::move(name)),
      timer_(executor_) {
  require_positive(name_, "target_batch_cost", limits_.target_batch_cost);
  require_positive(name_, "max_batch_size", limits_.max_batch_size);
  require_positive(name_, "min_batch_size", limits_.min_batch_size);
  require_positive(name_, "max_queue_size", limits_.max_queue_size);
  require_positive(name_, "prefetch_batches", limits_.prefetch_batches);
  require_positive(name_, "max_concurrent_batches", limits_.max_concurrent_batches);
  if (limits_.min_batch_size > limits_.max_batch_size) {
    throw InvalidArgument(name_ + ": min_batch_size (" + std::to_string(limits_.min_batch_size) +
                          ") exceeds max_batch_size (" + std::to_string(limits_.max_batch_size) +
                          ")");
  }
  if (limits_.batch_timeout.count() < 0) {
    throw InvalidArgument(name_ + ": batch_timeout must not be negative");
  }
}

Pipeline::~Pipeline() = default;

void Pipeline::start() {
  {
    std::lock_guard lock(mutex_);
    if (state_ == State::running) {
      throw StateError(name_ + " is already running");
    }
    if (state_ == State::stopping) {
      throw StateError(name_ + " is still stopping");
    }
    state_ = State::running;
    aggregator_done_ = false;
    aggregator_wait_ = AggregatorWait::none;
    aggregator_woken_ = false;
    workers_ = 1 + limits_.max_concurrent_batches;
  }
  auto self = shared_from_this();
  auto report = [name = name_](std::exception_ptr error) {
    if (!error) {
      return;
    }
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      log(LogLevel::error, name + ": batching coroutine failed: " + e.what());
    }
  };
  asio::co_spawn(executor_, aggregate(self), report);
  for (std::size_t i = 0; i < limits_.max_concurrent_batches; ++i) {
    asio::co_spawn(executor_, run_processor(self), report);
  }
}

void Pipeline::request_stop() {
  std::lock_guard lock(mutex_);
  if (state_ != State::running) {
    return;
  }
  state_ = State::stopping;
  wake_aggregator_locked(AggregatorWait::none);
}

asio::awaitable<void> Pipeline::stop() {
  request_stop();
  std::unique_lock lock(mutex_);
  if (state_ == State::stopped) {
    co_return;
  }
  // Counting stops, not testing state_, so that a restart before this coroutine resumes does not
  // make it wait for the next stop.
  const std::uint64_t stops = stops_;
  const auto stopped = [this, stops] { return stops_ != stops; };
  co_await stopped_.wait(lock, stopped);
}

bool Pipeline::is_running() const {
  std::lock_guard lock(mutex_);
  return state_ == State::running;
}

BatchStats Pipeline::stats() const {
  BatchStats stats;
  {
    std::lock_guard lock(stats_mutex_);
    stats.total_completed = completed_;
    stats.total_failed = failed_;
    stats.total_batches = batches_;
    stats.total_batch_cost = batch_cost_;
    stats.busy_time_s = std::chrono::duration<double>(busy_).count();
    stats.idle_time_s = std::chrono::duration<double>(idle_).count();
    stats.queue_wait_p50_s = std::chrono::duration<double>(queue_wait_.percentile(0.50)).count();
    stats.queue_wait_p99_s = std::chrono::duration<double>(queue_wait_.percentile(0.99)).count();
  }
  if (stats.total_batches > 0) {
    const auto batches = static_cast<double>(stats.total_batches);
    stats.avg_batch_size = static_cast<double>(stats.total_completed) / batches;
    stats.avg_batch_cost = static_cast<double>(stats.total_batch_cost) / batches;
  }
  stats.total_submitted = submitted_.load(std::memory_order_relaxed);
  stats.total_cancelled = cancelled_.load(std::memory_order_relaxed);
  stats.total_expired = expired_.load(std::memory_order_relaxed);
  stats.total_held = held_.load(std::memory_order_relaxed);
  return stats;
}

asio::awaitable<void> Pipeline::enqueue(std::span<const RequestPtr> requests) {
  std::unique_lock lock(mutex_);
  if (state_ != State::running) {
    throw StateError(name_ + " is not running");
  }
  submitted_.fetch_add(requests.size(), std::memory_order_relaxed);
  for (const auto& request : requests) {
    if (request->has_deadline()) {
      add_deadline_locked(request);
      if (aggregator_wait_ != AggregatorWait::none && request->deadline() < aggregator_wakes_at_) {
        wake_aggregator_locked(AggregatorWait::none);
      }
    }
  }
  std::size_t queued_now = 0;
  if (parked_.empty()) {
    const std::size_t waiting = queue_.size() - accepted_;
    const std::size_t room = limits_.max_queue_size - std::min(waiting, limits_.max_queue_size);
    queued_now = std::min(room, requests.size());
    queue_.insert(queue_.end(), requests.begin(),
                  requests.begin() + static_cast<std::ptrdiff_t>(queued_now));
    if (queued_now > 0) {
      wake_aggregator_locked(AggregatorWait::records);
    }
  }
  if (queued_now == requests.size()) {
    co_return;
  }
  // FIFO admission comes from the order of parked_, not from the condition variables.
  auto parked = std::make_shared<ParkedSubmit>();
  parked->requests = requests.subspan(queued_now);
  parked_.push_back(parked);
  std::exception_ptr cancelled;
  try {
    const auto admitted = [&parked] { return parked->admitted; };
    co_await parked->admission.wait(lock, admitted);
  } catch (const boost::system::system_error& e) {
    if (e.code() != asio::error::operation_aborted) {
      throw;
    }
    cancelled = std::current_exception();
  }
  if (!cancelled || parked->admitted) {
    co_return;
  }
  std::vector<RequestPtr> withdrawn;
  withdraw_locked(*parked, withdrawn);
  lock.unlock();
  const auto error =
      std::make_exception_ptr(Cancelled("batched request was cancelled before dispatch"));
  for (const auto& request : withdrawn) {
    request->fail(error);
  }
  std::rethrow_exception(cancelled);
}

void Pipeline::forget(const RequestBase& request) {
  cancelled_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  const auto it = std::find_if(queue_.begin(), queue_.end(), [&](const RequestPtr& queued) {
    return queued.get() == &request;
  });
  if (it == queue_.end()) {
    return;  // Already cut into a batch; the processing loop skips it.
  }
  const auto index = static_cast<std::size_t>(it - queue_.begin());
  queue_.erase(it);
  if (index < accepted_) {
    --accepted_;
    accepted_cost_ = 0;
    for (std::size_t i = 0; i < accepted_; ++i) {
      accepted_cost_ = saturating_add(accepted_cost_, queue_[i]->cost());
    }
  } else {
    const std::size_t before = queue_.size();
    admit_locked();
    if (queue_.size() > before) {
      wake_aggregator_locked(AggregatorWait::records);
    }
  }
}

asio::awaitable<void> Pipeline::aggregate(std::shared_ptr<Pipeline> self) {
  Pipeline& p = *self;
  std::vector<RequestPtr> expired;
  const auto woken = [&p] { return p.aggregator_woken_; };
  std::unique_lock lock(p.mutex_);
  for (;;) {
    auto wake_at = Clock::time_point::max();
    bool done = false;
    const auto now = Clock::now();
    p.expire_locked(now, expired);
    for (;;) {
      if (!p.cut_.empty()) {
        if (p.ready_.size() >= p.limits_.prefetch_batches) {
          break;
        }
        p.ready_.push_back(std::exchange(p.cut_, {}));
        p.batch_ready_.notify_one();
      }
      p.accept_locked(now);
      if (!p.should_cut_locked(now)) {
        break;
      }
      p.cut_locked();
    }
    // Due but not cut: min_batch_size holds it for more records.
    if (!p.batch_held_ && p.accepted_ > 0 && now >= p.batch_deadline_ &&
        !p.should_cut_locked(now)) {
      p.batch_held_ = true;
      p.held_.fetch_add(1, std::memory_order_relaxed);
    }
    if (p.state_ == State::stopping && p.cut_.empty() && p.queue_.empty() && p.parked_.empty()) {
      done = true;
      p.aggregator_done_ = true;
      p.aggregator_wait_ = AggregatorWait::none;
      p.deadlines_.clear();
      p.deadlines_after_compaction_ = 0;
      p.batch_ready_.notify_all();
    } else {
      if (!p.cut_.empty()) {
        p.aggregator_wait_ = AggregatorWait::room;
      } else {
        p.aggregator_wait_ = AggregatorWait::records;
        if (p.accepted_ > 0 && now < p.batch_deadline_) {
          wake_at = p.batch_deadline_;
        }
      }
      if (!p.deadlines_.empty()) {
        wake_at = std::min(wake_at, p.deadlines_.front().deadline);
      }
      p.aggregator_wakes_at_ = wake_at;
    }
    lock.unlock();
    if (!expired.empty()) {
      const auto error = std::make_exception_ptr(
          DeadlineExceeded(p.name_ + ": request deadline passed before dispatch"));
      for (auto& request : expired) {
        request->fail(error);
      }
      expired.clear();
    }
    if (done) {
      break;
    }
    // The timer only wakes us, so it is re-armed only when the deadline changes: records
    // arriving while a batch fills cost no timer system calls. Once it fired for a deadline,
    // every evaluation after the wake-up it causes is past that deadline, so a timer that already
    // fired is never mistaken for an armed one.
    if (wake_at != Clock::time_point::max() && wake_at != p.timer_deadline_) {
      p.timer_deadline_ = wake_at;
      p.timer_.expires_at(wake_at);
      p.timer_.async_wait([self](boost::system::error_code ec) {
        if (!ec) {
          std::lock_guard timer_lock(self->mutex_);
          self->wake_aggregator_locked(AggregatorWait::none);
        }
      });
    }
    // Every wake-up, including a stale one, re-checks everything above.
    lock.lock();
    co_await p.aggregator_wake_.wait(lock, woken);
    p.aggregator_woken_ = false;
  }
  p.timer_.cancel();  // a far-off deadline must not keep the io_context running
  p.timer_deadline_ = Clock::time_point::max();
  p.worker_finished();
}

asio::awaitable<void> Pipeline::run_processor(std::shared_ptr<Pipeline> self) {
  Pipeline& p = *self;
  std::vector<RequestPtr> claimed;
  for (;;) {
    const auto idle_from = Clock::now();
    std::vector<RequestPtr> batch = co_await p.next_batch();
    const auto started = Clock::now();
    if (batch.empty()) {
      std::lock_guard lock(p.stats_mutex_);
      p.idle_ += started - idle_from;
      break;
    }
    claimed.clear();
    std::exception_ptr expiry;
    for (auto& request : batch) {
      if (!request->try_claim()) {
        continue;  // cancelled or expired while waiting for us
      }
      if (request->deadline() <= started) {
        if (!expiry) {
          expiry = std::make_exception_ptr(
              DeadlineExceeded(p.name_ + ": request deadline passed before dispatch"));
        }
        p.expired_.fetch_add(1, std::memory_order_relaxed);
        request->fail(expiry);
        continue;
      }
      claimed.push_back(std::move(request));
    }
    std::exception_ptr error;
    if (!claimed.empty()) {
      try {
        co_await p.process(claimed);
      } catch (...) {
        error = std::current_exception();
      }
    }
    const auto finished = Clock::now();
    {
      // Counted before the futures resolve, so a caller that saw its result sees it counted.
      std::lock_guard lock(p.stats_mutex_);
      p.idle_ += started - idle_from;
      if (!claimed.empty()) {
        p.busy_ += finished - started;
        ++p.batches_;
        p.completed_ += claimed.size();
        if (error) {
          p.failed_ += claimed.size();
        }
        for (const auto& request : claimed) {
          p.batch_cost_ += request->cost();
          p.queue_wait_.record(started - request->submitted_at());
        }
      }
    }
    for (auto& request : claimed) {
      if (error) {
        request->fail(error);
      } else {
        request->succeed();
      }
    }
  }
  p.worker_finished();
}

asio::awaitable<std::vector<RequestPtr>> Pipeline::next_batch() {
  std::unique_lock lock(mutex_);
  const auto batch_or_end = [this] { return !ready_.empty() || aggregator_done_; };
  co_await batch_ready_.wait(lock, batch_or_end);
  std::vector<RequestPtr> batch;
  if (!ready_.empty()) {
    batch = std::move(ready_.front());
    ready_.pop_front();
    wake_aggregator_locked(AggregatorWait::room);
  }
  co_return batch;
}

void Pipeline::worker_finished() {
  std::lock_guard lock(mutex_);
  if (--workers_ == 0) {
    state_ = State::stopped;
    ++stops_;
    stopped_.notify_all();
  }
}

void Pipeline::withdraw_locked(const ParkedSubmit& parked, std::vector<RequestPtr>& withdrawn) {
  parked_.erase(std::find_if(parked_.begin(), parked_.end(),
                             [&](const auto& entry) { return entry.get() == &parked; }));
  for (const auto& request : parked.requests) {
    if (request->try_claim()) {
      withdrawn.push_back(request);
    }
  }
  cancelled_.fetch_add(withdrawn.size(), std::memory_order_relaxed);
  // A stopping aggregator waits for parked_ to empty.
  wake_aggregator_locked(AggregatorWait::none);
}

void Pipeline::expire_locked(Clock::time_point now, std::vector<RequestPtr>& expired) {
  while (!deadlines_.empty() && deadlines_.front().deadline <= now) {
    std::pop_heap(deadlines_.begin(), deadlines_.end(), later_deadline);
    RequestPtr request = std::move(deadlines_.back().request);
    deadlines_.pop_back();
    if (request->try_claim()) {
      expired.push_back(std::move(request));
    }
  }
  if (expired.empty()) {
    return;
  }
  expired_.fetch_add(expired.size(), std::memory_order_relaxed);
  // One compaction pass for the whole sweep; parked submits skip their expired requests when
  // admitted, and cut batches are filtered by the processing loop.
  std::size_t kept = 0;
  std::size_t kept_accepted = 0;
  std::size_t kept_cost = 0;
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    if (!queue_[i]->queued()) {
      continue;
    }
    if (i < accepted_) {
      ++kept_accepted;
      kept_cost = saturating_add(kept_cost, queue_[i]->cost());
    }
    queue_[kept++] = std::move(queue_[i]);
  }
  queue_.resize(kept);
  accepted_ = kept_accepted;
  accepted_cost_ = kept_cost;
}

void Pipeline::admit_locked() {
  while (!parked_.empty() && queue_.size() - accepted_ < limits_.max_queue_size) {
    ParkedSubmit& parked = *parked_.front();
    const RequestPtr& request = parked.requests.front();
    if (request->queued()) {
      queue_.push_back(request);
    }
    parked.requests = parked.requests.subspan(1);
    if (parked.requests.empty()) {
      parked.admitted = true;
      parked.admission.notify_one();
      parked_.pop_front();
    }
  }
}

void Pipeline::accept_locked(Clock::time_point now) {
  for (;;) {
    admit_locked();
    if (accepted_ == queue_.size()) {
      return;
    }
    const RequestBase& next = *queue_[accepted_];
    if (accepted_ == 0) {
      // The first record is always taken. Its timeout runs from its submission, so a record
      // that already waited (for room, or for this coroutine to run) is not made to wait again.
      batch_deadline_ = next.submitted_at() + limits_.batch_timeout;
    } else if (accepted_cost_ >= limits_.target_batch_cost ||
               accepted_ >= limits_.max_batch_size ||
               // Judged by when the record came, so the answer does not depend on how soon
               // this coroutine got to run; a held batch takes every record.
               (now >= batch_deadline_ && next.submitted_at() >= batch_deadline_ &&
                accepted_ >= limits_.min_batch_size)) {
      return;
    }
    accepted_cost_ = saturating_add(accepted_cost_, next.cost());
    ++accepted_;
  }
}

bool Pipeline::should_cut_locked(Clock::time_point now) const {
  if (accepted_ == 0) {
    return false;
  }
  // A full batch goes even below min_batch_size: holding it could never make it bigger.
  if (accepted_cost_ >= limits_.target_batch_cost || accepted_ >= limits_.max_batch_size) {
    return true;
  }
  const bool stopping = state_ == State::stopping;
  if (stopping && accepted_ == queue_.size() && parked_.empty()) {
    return true;  // nothing more can arrive: flush
  }
  return now >= batch_deadline_ && (accepted_ >= limits_.min_batch_size || stopping);
}

void Pipeline::cut_locked() {
  const auto end = queue_.begin() + static_cast<std::ptrdiff_t>(accepted_);
  cut_.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(end));
  queue_.erase(queue_.begin(), end);
  accepted_ = 0;
  accepted_cost_ = 0;
  batch_held_ = false;
}

void Pipeline::add_deadline_locked(const RequestPtr& request) {
  // Entries of requests that were dispatched or cancelled go stale; dropping them whenever the
  // heap has doubled keeps it within twice the live entries, at amortized O(1) per insert.
  if (deadlines_.size() >= 2 * deadlines_after_compaction_ + 64) {
    std::erase_if(deadlines_, [](const DeadlineEntry& entry) { return !entry.request->queued(); });
    std::make_heap(deadlines_.begin(), deadlines_.end(), later_deadline);
    deadlines_after_compaction_ = deadlines_.size();
  }
  deadlines_.push_back({request->deadline(), request});
  std::push_heap(deadlines_.begin(), deadlines_.end(), later_deadline);
}

void Pipeline::wake_aggregator_locked(AggregatorWait reason) {
  if (aggregator_wait_ == AggregatorWait::none ||
      (reason != AggregatorWait::none && aggregator_wait_ != reason)) {
    return;
  }
  aggregator_wait_ = AggregatorWait::none;
  // Set even before the aggregator parks: its predicate then sees it and it does not park.
  aggregator_woken_ = true;
  aggregator_wake_.notify_one();
}

}  // namespace tensorstream::detail
