#include "storage/http/response_waits.hpp"

#include <utility>

namespace tensorstream {

ResponseWaits::Wait::Wait(Wait&& other) noexcept
    : waits_(std::exchange(other.waits_, nullptr)), entry_(other.entry_) {}

ResponseWaits::Wait& ResponseWaits::Wait::operator=(Wait&& other) noexcept {
  if (this != &other) {
    end();
    waits_ = std::exchange(other.waits_, nullptr);
    entry_ = other.entry_;
  }
  return *this;
}

void ResponseWaits::Wait::end() {
  if (waits_ == nullptr) return;
  std::lock_guard lock(waits_->mutex_);
  waits_->entries_.erase(entry_);
  waits_ = nullptr;
}

ResponseWaits::Wait ResponseWaits::begin(Phase phase, const std::string& host) {
  std::lock_guard lock(mutex_);
  // The time is taken under the lock, so that the list stays in the order of the times.
  entries_.push_back({Clock::now(), phase, &host});
  return Wait(this, std::prev(entries_.end()));
}

std::optional<ResponseWaits::Longest> ResponseWaits::longest(Clock::time_point now) const {
  std::lock_guard lock(mutex_);
  if (entries_.empty()) return std::nullopt;
  const Wait::Entry& first = entries_.front();
  const char* what = first.phase == Phase::connection ? "a connection to " : "a response from ";
  return Longest{what + *first.host, now - first.since};
}

}  // namespace tensorstream
