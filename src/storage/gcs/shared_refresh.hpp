#pragma once
// One token refresh shared by every caller that needs it, so that a stream's many concurrent
// requests do not each ask the token endpoint for a token.

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <exception>
#include <list>
#include <mutex>
#include <optional>
#include <utility>

#include "tensorstream/storage/gcs/access_token.hpp"

namespace tensorstream::gcs {

/// At most one refresh at a time: the caller that claims it runs it, and callers that join()
/// while it runs get its outcome. Callers may run on different executors and threads.
class SharedRefresh {
 public:
  /// The right to run the refresh, and the duty to report its outcome.
  class Claim {
   public:
    explicit Claim(SharedRefresh& owner) : owner_(&owner) {}
    Claim(Claim&& other) noexcept : owner_(std::exchange(other.owner_, nullptr)) {}
    Claim& operator=(Claim&&) = delete;

    /// Abandons the refresh if no outcome was reported (its coroutine was cancelled or
    /// destroyed): the waiting callers then look again instead of waiting forever.
    ~Claim();

    /// Ends the refresh with `token`, which every waiting caller gets.
    void succeed(const AccessToken& token);

    /// Ends the refresh with `error`, which every waiting caller throws.
    void fail(std::exception_ptr error);

   private:
    SharedRefresh* owner_;
  };

  SharedRefresh() = default;
  SharedRefresh(const SharedRefresh&) = delete;
  SharedRefresh& operator=(const SharedRefresh&) = delete;

  /// Claims the refresh; nullopt while another caller's refresh runs.
  std::optional<Claim> claim();

  /// Waits for the refresh that runs now and returns its token, or throws its error. nullopt
  /// at once when none runs, or when the one that ran was abandoned. Cancelling the waiting
  /// coroutine throws boost::system::system_error(operation_aborted).
  boost::asio::awaitable<std::optional<AccessToken>> join();

 private:
  using Handler =
      boost::asio::any_completion_handler<void(std::exception_ptr, std::optional<AccessToken>)>;

  struct Waiter {
    std::uint64_t id;
    boost::asio::any_io_executor executor;  ///< Where the waiting coroutine resumes.
    Handler handler;
  };

  void end(std::exception_ptr error, const std::optional<AccessToken>& token);
  void cancel(std::uint64_t id);

  std::mutex mutex_;
  bool running_ = false;
  std::uint64_t next_id_ = 0;
  std::list<Waiter> waiters_;
};

}  // namespace tensorstream::gcs
