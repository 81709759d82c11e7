#pragma once
/// @file
/// Waiting at shutdown for work that is still running.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <mutex>
#include <utility>

#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/export.hpp"

namespace tensorstream::async {

/// Counts work in progress so that shutdown can wait for it, after Seastar's `gate`: work
/// enters before it starts and leaves when done; close() refuses new work and waits until all
/// that entered has left. Thread-safe.
class TENSORSTREAM_API Gate {
 public:
  /// Leaves the gate on destruction: the scope of one piece of work.
  class Holder {
   public:
    Holder() = default;
    explicit Holder(Gate& gate) : gate_(&gate) { gate.enter(); }
    Holder(Holder&& other) noexcept : gate_(std::exchange(other.gate_, nullptr)) {}
    Holder& operator=(Holder&& other) noexcept {
      if (this != &other) {
        release();
        gate_ = std::exchange(other.gate_, nullptr);
      }
      return *this;
    }
    ~Holder() { release(); }

    /// Leaves now instead of on destruction.
    void release() noexcept {
      if (gate_ != nullptr) std::exchange(gate_, nullptr)->leave();
    }

   private:
    Gate* gate_ = nullptr;
  };

  Gate() = default;
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  /// Counts one more piece of work in. @throws StateError once close() was called.
  void enter();

  /// Like enter(), but returns false instead of throwing when closed.
  bool try_enter() noexcept;

  /// Counts one piece of work out; wakes close() when it was the last.
  void leave() noexcept;

  /// Refuses new work from now on and suspends until every piece that entered has left. Several
  /// coroutines may close the same gate; all return once it is empty.
  /// @throws boost::system::system_error (operation_aborted) when the caller is cancelled; the
  ///   gate stays closed.
  boost::asio::awaitable<void> close();

  /// Whether close() was called.
  bool is_closed() const noexcept;

  /// Pieces of work inside now.
  std::size_t count() const noexcept;

 private:
  mutable std::mutex mutex_;
  std::size_t count_ = 0;
  bool closed_ = false;
  ConditionVariable empty_;
};

}  // namespace tensorstream::async
