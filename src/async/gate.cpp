#include "tensorstream/async/gate.hpp"

#include "tensorstream/error.hpp"

namespace tensorstream::async {

void Gate::enter() {
  if (!try_enter()) throw StateError("the gate is closed: no new work is accepted");
}

bool Gate::try_enter() noexcept {
  std::lock_guard lock(mutex_);
  if (closed_) return false;
  ++count_;
  return true;
}

void Gate::leave() noexcept {
  std::lock_guard lock(mutex_);
  if (--count_ == 0) empty_.notify_all();
}

boost::asio::awaitable<void> Gate::close() {
  std::unique_lock lock(mutex_);
  closed_ = true;
  co_await empty_.wait(lock, [this] { return count_ == 0; });
}

bool Gate::is_closed() const noexcept {
  std::lock_guard lock(mutex_);
  return closed_;
}

std::size_t Gate::count() const noexcept {
  std::lock_guard lock(mutex_);
  return count_;
}

}  // namespace tensorstream::async
