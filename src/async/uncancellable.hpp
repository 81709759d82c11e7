#pragma once
// Awaiting work that must finish once started, whatever the caller's cancellation.

#include <boost/asio/awaitable.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace tensorstream::async {

/// Awaits `work` with the caller's cancellation kept from it: for a request whose effect the
/// caller must learn once it is sent, such as the S3 multipart upload a CreateMultipartUpload
/// makes, which only its answer's upload id can abort. A cancellation that arrives meanwhile
/// takes effect at the caller's next wait; one that came before throws here, and nothing starts.
template <class T>
boost::asio::awaitable<T> uncancellable(boost::asio::awaitable<T> work) {
  namespace asio = boost::asio;
  const auto executor = co_await asio::this_coro::executor;
  co_return co_await asio::co_spawn(
      executor, std::move(work),
      asio::bind_cancellation_slot(asio::cancellation_slot(), asio::use_awaitable));
}

}  // namespace tensorstream::async
