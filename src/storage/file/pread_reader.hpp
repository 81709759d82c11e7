#pragma once
// FileReader for when io_uring is not available: blocking pread on a few threads of its own.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <vector>

#include "storage/file/file_reader.hpp"
#include "tensorstream/async/library_thread.hpp"

namespace tensorstream {

class PreadReader final : public FileReader {
 public:
  PreadReader(boost::asio::any_io_executor executor, std::size_t threads);
  // Lets the reads already running finish and fails the queued ones with operation_aborted.
  ~PreadReader() override;

  void start(const FileRead& read, std::unique_ptr<ReadCompletion> completion) override;
  boost::asio::any_io_executor executor() const override { return executor_; }

 private:
  struct Job {
    FileRead read;
    std::unique_ptr<ReadCompletion> completion;
  };

  void work();

  boost::asio::any_io_executor executor_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::vector<async::LibraryThread> threads_;
};

}  // namespace tensorstream
