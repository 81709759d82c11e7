#include "storage/file/pread_reader.hpp"

#include <unistd.h>

#include <boost/asio/error.hpp>
#include <cerrno>

#include "storage/errno_code.hpp"

namespace tensorstream {
namespace {

// Below the kernel's limit of a little under 2 GiB per read, and block-aligned for direct I/O.
constexpr std::size_t kPreadPieceSize = std::size_t{1} << 30;

boost::system::error_code read_fully(const FileRead& read) {
  for (ReadPiece& piece : split_read(read, kPreadPieceSize)) {
    for (;;) {
      const ssize_t n = ::pread(piece.kernel_fd(), piece.kernel_data(), piece.kernel_length(),
                                static_cast<off_t>(piece.kernel_offset()));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EINVAL && piece.is_direct()) {
          piece.read_buffered();
          if (read.direct_refused != nullptr) *read.direct_refused = true;
          continue;
        }
        return errno_code(errno);
      }
      const auto progress = piece.advance(static_cast<std::size_t>(n));
      if (progress == ReadPiece::Progress::eof) return boost::asio::error::eof;
      if (progress == ReadPiece::Progress::done) break;
    }
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

void PreadReader::start(const FileRead& read, std::unique_ptr<ReadCompletion> completion) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(Job{read, std::move(completion)});
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
                           read_fully(job.read));
  }
}

}  // namespace tensorstream
