#include "storage/upload_writer.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"

namespace tensorstream {

namespace asio = boost::asio;

void UploadWriter::check_open() const {
  if (state_ == State::committed) throw StateError(url_ + ": already committed");
  if (state_ == State::aborted) throw StateError(url_ + ": the upload was aborted");
}

asio::awaitable<void> UploadWriter::discard_uncancellable() {
  co_await asio::this_coro::reset_cancellation_state();
  const auto executor = co_await asio::this_coro::executor;
  auto work = discard();
  co_await asio::co_spawn(executor, std::move(work),
                          asio::bind_cancellation_slot(asio::cancellation_slot(),
                                                       asio::use_awaitable));
}

asio::awaitable<void> UploadWriter::fail(std::exception_ptr error) {
  state_ = State::aborted;
  try {
    co_await discard_uncancellable();
  } catch (const std::exception& discard_error) {
    log(LogLevel::warning, discard_error.what());
  }
  std::rethrow_exception(error);
}

asio::awaitable<void> UploadWriter::complete(asio::awaitable<void> completion,
                                             CompletedCheck check) {
  std::exception_ptr failure;
  std::string message;
  try {
    co_await std::move(completion);
    co_return;
  } catch (const StorageError& error) {
    failure = std::current_exception();
    message = error.what();
  }
  std::optional<std::string> found;
  try {
    found = co_await check();
  } catch (const Error& error) {
    log(LogLevel::debug, std::string(error.what()) + " (checking the object after its completion "
                                                     "failed)");
  }
  if (!found) std::rethrow_exception(failure);
  log(LogLevel::warning, message + "; but the object is complete (" + *found +
                             "): the store completed it and its answer was lost");
}

asio::awaitable<void> UploadWriter::write(std::span<const std::byte> bytes) {
  check_open();
  std::exception_ptr error;
  try {
    co_await write_or_fail(bytes);
  } catch (...) {
    error = std::current_exception();
  }
  if (error) co_await fail(error);
}

asio::awaitable<void> UploadWriter::commit() {
  check_open();
  std::exception_ptr error;
  try {
    co_await commit_or_fail();
  } catch (...) {
    error = std::current_exception();
  }
  if (error) co_await fail(error);
  state_ = State::committed;
}

asio::awaitable<void> UploadWriter::abort() {
  if (state_ != State::open) co_return;
  state_ = State::aborted;
  co_await discard_uncancellable();
}

}  // namespace tensorstream
