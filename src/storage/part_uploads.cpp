#include "storage/part_uploads.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <utility>

namespace tensorstream {

namespace asio = boost::asio;

PartUploads::PartUploads(asio::any_io_executor executor, std::size_t max_in_flight,
                         Upload upload)
    : max_in_flight_(max_in_flight),
      upload_(std::move(upload)),
      strand_(asio::make_strand(std::move(executor))) {}

asio::awaitable<void> PartUploads::start(std::vector<std::byte> bytes) {
  std::unique_lock lock(mutex_);
  co_await changed_.wait(lock, [&] { return in_flight_ < max_in_flight_ || error_; });
  if (error_) std::rethrow_exception(error_);
  answers_.emplace_back();
  const std::size_t number = answers_.size();
  auto signal = std::make_shared<asio::cancellation_signal>();
  cancels_.emplace(number, signal);
  ++in_flight_;
  asio::co_spawn(strand_, run(shared_from_this(), number, std::move(bytes)),
                 asio::bind_cancellation_slot(signal->slot(), asio::detached));
}

std::size_t PartUploads::started() const {
  const std::lock_guard lock(mutex_);
  return answers_.size();
}

asio::awaitable<std::vector<std::string>> PartUploads::finish() {
  std::unique_lock lock(mutex_);
  co_await changed_.wait(lock, [&] { return in_flight_ == 0; });
  if (error_) std::rethrow_exception(error_);
  co_return answers_;
}

asio::awaitable<void> PartUploads::cancel() {
  // Signals are emitted on the strand where the uploads run, as Asio requires.
  asio::post(strand_, [self = shared_from_this()] {
    std::vector<std::shared_ptr<asio::cancellation_signal>> signals;
    {
      const std::lock_guard lock(self->mutex_);
      for (const auto& [number, signal] : self->cancels_) signals.push_back(signal);
    }
    for (const auto& signal : signals) signal->emit(asio::cancellation_type::terminal);
  });
  std::unique_lock lock(mutex_);
  co_await changed_.wait(lock, [&] { return in_flight_ == 0; });
}

asio::awaitable<void> PartUploads::run(std::shared_ptr<PartUploads> self, std::size_t number,
                                       std::vector<std::byte> bytes) {
  std::exception_ptr error;
  std::string answer;
  try {
    answer = co_await self->upload_(number, std::move(bytes));
  } catch (...) {
    error = std::current_exception();
  }
  {
    const std::lock_guard lock(self->mutex_);
    if (error && !self->error_) self->error_ = error;
    if (!error) self->answers_[number - 1] = std::move(answer);
    self->cancels_.erase(number);
    --self->in_flight_;
  }
  self->changed_.notify_all();
}

}  // namespace tensorstream
