#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>

#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/streaming/streamed_tensor.hpp"

namespace tensorstream::detail {

/// What the stream hands to consumers, and the state behind it, under one mutex. Both next()
/// and next_blocking() read it; each has its own way to park.
struct Outbox {
  std::mutex mutex;
  std::condition_variable changed;  ///< Wakes next_blocking().
  async::ConditionVariable ready;   ///< Wakes next().
  std::deque<StreamedTensor> tensors;
  std::exception_ptr error;
  bool consumer_waiting = false;
  bool discovered = false;
  bool run_ended = false;  ///< finish() ran: nothing of the stream runs any more.
  std::uint64_t files_count = 0;
  std::uint64_t tensors_total = 0;
  std::uint64_t tensors_delivered = 0;
  std::uint64_t tensors_yielded = 0;
  std::uint64_t bytes_total = 0;
  /// Tensor bytes of the chunks read to the end (a coalesced run's once it is delivered).
  std::uint64_t bytes_landed = 0;
  /// Everything the reads counted in bytes_landed read, gaps included.
  std::uint64_t read_bytes_counted = 0;
  /// The store's byte count once discovery is done: what it counts on top comes from chunks.
  std::optional<std::uint64_t> store_bytes_before_reads;
  std::uint64_t jobs_in_flight = 0;
  int group_size = 1;
  std::uint64_t broadcast_bytes = 0;
  std::optional<std::uint64_t> blocked_request;
  std::optional<std::chrono::steady_clock::time_point> first_tensor_at;
  std::optional<std::chrono::steady_clock::time_point> finished_at;

  /// Marks the one pending next() or next_blocking() for its scope, however it ends. Takes the
  /// mutex itself: it lives outside the caller's lock.
  class Consumer {
   public:
    explicit Consumer(Outbox& outbox) : outbox_(outbox) {
      std::lock_guard lock(outbox.mutex);
      if (outbox.consumer_waiting) throw StateError("next() called while another is pending");
      outbox.consumer_waiting = true;
    }
    ~Consumer() {
      std::lock_guard lock(outbox_.mutex);
      if (!done_) outbox_.consumer_waiting = false;
    }

    /// Ends the wait under the outbox's lock, before the tensor is taken: once it holds the
    /// tensor the consumer is no longer waiting, and a stall check between the take and the
    /// destructor would otherwise blame it for memory it is about to release.
    void done_locked() {
      outbox_.consumer_waiting = false;
      done_ = true;
    }
    Consumer(const Consumer&) = delete;
    Consumer& operator=(const Consumer&) = delete;

   private:
    Outbox& outbox_;
    bool done_ = false;
  };

  bool finished_locked() const { return discovered && tensors_delivered == tensors_total; }

  bool has_news_locked() const { return error || !tensors.empty() || finished_locked(); }

  // Called once has_news_locked() holds.
  std::optional<StreamedTensor> take_locked() {
    if (error) std::rethrow_exception(error);
    if (tensors.empty()) return std::nullopt;
    StreamedTensor tensor = std::move(tensors.front());
    tensors.pop_front();
    ++tensors_yielded;
    return tensor;
  }

  void notify_locked() {
    changed.notify_all();
    ready.notify_all();
  }

  void fail_locked(std::exception_ptr failure) {
    if (error) return;
    error = std::move(failure);
    notify_locked();
  }
};

}  // namespace tensorstream::detail
