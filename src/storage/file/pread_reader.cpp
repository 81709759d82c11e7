#include "storage/file/pread_reader.hpp"

#include <unistd.h>

#include <boost/asio/error.hpp>
#include <cerrno>

namespace tensorstream {
namespace {

boost::system::error_code read_fully(int fd, std::uint64_t offset,
                                     std::span<std::byte> destination) {
  std::size_t done = 0;
  while (done < destination.size()) {
    const ssize_t n = ::pread(fd, destination.data() + done, destination.size() - done,
                              static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return {errno, boost::system::system_category()};
    }
    if (n == 0) return boost::asio::error::eof;
    done += static_cast<std::size_t>(n);
  }
  return {};
}

}  // namespace

PreadReader::PreadReader(boost::asio::any_io_executor executor, std::size_t threads)
    : executor_(std::move(executor)) {
  threads_.reserve(threads);
  for (std::size_t i = 0; i < threads; ++i) threads_.emplace_back("ts-pread", [this] { work(); });
}

PreadReader::~PreadReader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& thread : threads_) thread.join();
  for (auto& job : jobs_) {
    ReadCompletion::finish(std::move(job.completion), boost::asio::error::operation_aborted);
  }
}

void PreadReader::start(int fd, std::uint64_t offset, std::span<std::byte> destination,
                        std::unique_ptr<ReadCompletion> completion) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{fd, offset, destination, std::move(completion)});
  }
  wake_.notify_one();
}

void PreadReader::work() {
  for (;;) {
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    ReadCompletion::finish(std::move(job.completion),
                           read_fully(job.fd, job.offset, job.destination));
  }
}

}  // namespace tensorstream
