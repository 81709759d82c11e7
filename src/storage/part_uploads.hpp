#pragma once
// The parts of one upload in flight at the same time (S3's multipart upload parts, Azure's
// blocks): a bounded number of them, each cancellable, the first failure kept for the writer.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/strand.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensorstream/async/condition_variable.hpp"

namespace tensorstream {

/// Uploads an object's parts in the background, at most `max_in_flight` at a time, keeping what
/// each upload answered (an ETag, a block id) by part number. Made with std::make_shared: the
/// uploads in flight hold it, so it may outlive the writer that started them.
class PartUploads : public std::enable_shared_from_this<PartUploads> {
 public:
  /// Uploads part `number` (from 1) with the bytes given; returns what the store answered.
  using Upload = std::function<boost::asio::awaitable<std::string>(std::size_t number,
                                                                    std::vector<std::byte>)>;

  /// Runs `upload` on a strand of `executor`.
  PartUploads(boost::asio::any_io_executor executor, std::size_t max_in_flight, Upload upload);

  /// Waits until fewer than max_in_flight parts are in flight, then starts uploading `bytes` as
  /// the next part. Throws the first failure of an earlier part instead.
  boost::asio::awaitable<void> start(std::vector<std::byte> bytes);

  /// How many parts were started.
  std::size_t started() const;

  /// Waits for every part, then returns their answers in part order; throws the first failure.
  boost::asio::awaitable<std::vector<std::string>> finish();

  /// Cancels the parts in flight and waits until they ended.
  boost::asio::awaitable<void> cancel();

 private:
  // Static, with the state by value: the frame keeps it alive until the upload ended.
  static boost::asio::awaitable<void> run(std::shared_ptr<PartUploads> self, std::size_t number,
                                          std::vector<std::byte> bytes);

  const std::size_t max_in_flight_;
  const Upload upload_;
  boost::asio::strand<boost::asio::any_io_executor> strand_;  // Where the uploads run.
  mutable std::mutex mutex_;
  async::ConditionVariable changed_;  // Notified when an upload ends.
  // Guarded by mutex_:
  std::size_t in_flight_ = 0;
  std::vector<std::string> answers_;  // Of parts 1, 2, ...; empty while a part is in flight.
  std::exception_ptr error_;          // The first upload's failure.
  std::map<std::size_t, std::shared_ptr<boost::asio::cancellation_signal>> cancels_;
};

}  // namespace tensorstream
