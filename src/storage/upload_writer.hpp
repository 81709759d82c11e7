#pragma once
// The life of an ObjectWriter that uploads to a network store: open until committed, aborted by
// abort() or by any failure, and what it uploaded discarded whichever way it ends uncommitted.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "tensorstream/storage/object_writer.hpp"

namespace tensorstream {

/// How many times the client's response timeout the request that completes an upload may wait
/// for its answer: stores assemble the object first (s3rver took over 10 s for 1 GB).
inline constexpr unsigned completion_timeout_factor = 6;

/// An ObjectWriter whose write() and commit() abort it when they fail, before throwing, and
/// whose abort() discards the upload once, also when the caller was cancelled (the usual
/// reason to abort). Subclasses upload; this class keeps the state.
class UploadWriter : public ObjectWriter {
 public:
  explicit UploadWriter(std::string url) : url_(std::move(url)) {}

  const std::string& url() const final { return url_; }
  boost::asio::awaitable<void> write(std::span<const std::byte> bytes) final;
  boost::asio::awaitable<void> commit() final;
  boost::asio::awaitable<void> abort() final;

 protected:
  /// Whether neither commit(), abort() nor a failure has ended the writer.
  bool is_open() const { return state_ == State::open; }

  /// Buffers or uploads `bytes`; what it throws aborts the writer.
  virtual boost::asio::awaitable<void> write_or_fail(std::span<const std::byte> bytes) = 0;
  /// Completes the upload; what it throws aborts the writer.
  virtual boost::asio::awaitable<void> commit_or_fail() = 0;
  /// Frees the buffers and removes what was uploaded. Throws StorageError naming what stays
  /// stored when the store refuses.
  virtual boost::asio::awaitable<void> discard() = 0;

  /// Says what the store holds under the object's name ("1234 bytes, ETag ...") when that is
  /// the object uploaded; nullopt when it is not, or cannot be told.
  using CompletedCheck = std::function<boost::asio::awaitable<std::optional<std::string>>()>;

  /// Awaits `completion`, the request that makes the object visible. The store may carry it out
  /// and its answer be lost, and the retries then fail (S3 answers 500 or NoSuchUpload to a
  /// completed upload): when `completion` fails with a StorageError, `check` decides, and an
  /// object found complete is a success (with a warning naming the failure); otherwise the
  /// failure is thrown.
  boost::asio::awaitable<void> complete(boost::asio::awaitable<void> completion,
                                        CompletedCheck check);

  const std::string url_;  ///< The object's URL, as used in messages.

 private:
  enum class State { open, committed, aborted };

  void check_open() const;
  // Runs discard() to its end: the caller's cancellation is reset and not passed on.
  boost::asio::awaitable<void> discard_uncancellable();
  // Aborts after `error`, logging a failure to discard, and throws `error`.
  boost::asio::awaitable<void> fail(std::exception_ptr error);

  State state_ = State::open;
};

}  // namespace tensorstream
