#pragma once
// The engine under FileStore that moves file bytes into caller memory (io_uring or pread).

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "storage/file/read_pieces.hpp"

namespace tensorstream {

// A waiting read's completion handler with its type erased, so readers need no templates.
class ReadCompletion {
 public:
  virtual ~ReadCompletion() = default;

  // Hands `error` to the handler on the handler's own executor and destroys the completion.
  static void finish(std::unique_ptr<ReadCompletion> completion, boost::system::error_code error) {
    completion->deliver(error);
  }

 private:
  virtual void deliver(boost::system::error_code error) = 0;
};

template <typename Handler>
class ReadCompletionFor final : public ReadCompletion {
 public:
  ReadCompletionFor(Handler handler, const boost::asio::any_io_executor& fallback)
      : work_(boost::asio::get_associated_executor(handler, fallback)),
        handler_(std::move(handler)) {}

 private:
  void deliver(boost::system::error_code error) override {
    // Posting, never invoking inline: the reader calls this under its own locks and on threads
    // the handler's owner does not expect.
    boost::asio::post(work_.get_executor(), boost::asio::append(std::move(handler_), error));
  }

  boost::asio::executor_work_guard<
      boost::asio::associated_executor_t<Handler, boost::asio::any_io_executor>>
      work_;
  Handler handler_;
};

// Reads exactly the bytes a FileRead asks for, or fails with an error code:
// boost::asio::error::eof when the file ends first, operation_aborted when the reader is
// destroyed first, else the errno of the failed read. Direct reads the file system refuses are
// read through the page cache instead.
class FileReader {
 public:
  virtual ~FileReader() = default;

  virtual void start(const FileRead& read, std::unique_ptr<ReadCompletion> completion) = 0;

  // Executor for handlers that have none of their own.
  virtual boost::asio::any_io_executor executor() const = 0;
};

template <typename CompletionToken>
auto async_read_file(FileReader& reader, const FileRead& read, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(boost::system::error_code)>(
      [&reader, read](auto handler) {
        using Handler = decltype(handler);
        reader.start(read, std::make_unique<ReadCompletionFor<Handler>>(std::move(handler),
                                                                        reader.executor()));
      },
      token);
}

}  // namespace tensorstream
