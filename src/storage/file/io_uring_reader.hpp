#pragma once
// FileReader over one io_uring ring, whose completions an eventfd on the executor reports.

#include <boost/system/error_code.hpp>
#include <memory>

#include "storage/file/file_reader.hpp"

namespace tensorstream {

class IoUringReader final : public FileReader {
 public:
  // Null, with `error` saying why, when the kernel does not let this process use io_uring.
  static std::unique_ptr<IoUringReader> create(boost::asio::any_io_executor executor,
                                               unsigned queue_depth,
                                               boost::system::error_code& error);

  // Whether create() would succeed, without needing an executor.
  static boost::system::error_code probe();

  // Fails queued reads with operation_aborted, cancels those in the kernel and waits for them,
  // because the kernel may still be writing into their destinations.
  ~IoUringReader() override;

  void start(const FileRead& read, std::unique_ptr<ReadCompletion> completion) override;
  boost::asio::any_io_executor executor() const override;

 private:
  class Ring;
  explicit IoUringReader(std::shared_ptr<Ring> ring) : ring_(std::move(ring)) {}

  // Shared with the pending eventfd wait, which may outlive the reader until its handler runs.
  std::shared_ptr<Ring> ring_;
};

}  // namespace tensorstream
