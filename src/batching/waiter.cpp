#include "tensorstream/batching/detail/waiter.hpp"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>

namespace tensorstream::detail {

void Waiter::complete(boost::system::error_code error) {
  if (!handler_) {
    return;
  }
  // Posting keeps the work count up until the handler runs; our tracked copy can go after that.
  auto executor = std::move(executor_);
  boost::asio::post(executor, [handler = std::move(handler_), error]() mutable {
    std::move(handler)(error);
  });
}

void Waiter::dispatch() {
  if (!handler_) {
    return;
  }
  auto executor = std::move(executor_);
  boost::asio::dispatch(executor, [handler = std::move(handler_)]() mutable {
    std::move(handler)(boost::system::error_code());
  });
}

}  // namespace tensorstream::detail
