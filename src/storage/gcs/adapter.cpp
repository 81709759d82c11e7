#include "storage/gcs/adapter.hpp"

#include "storage/gcs/error_body.hpp"

namespace tensorstream::gcs {

Adapter::Adapter(std::shared_ptr<TokenProvider> tokens) : tokens_(std::move(tokens)) {}

boost::asio::awaitable<Authorization> Adapter::authorize(const RequestHead&) {
  if (!tokens_) co_return Authorization{};
  const AccessToken token = co_await tokens_->get();
  co_return Authorization{.headers = "Authorization: Bearer " + token.value + "\r\n"};
}

void Adapter::interpret(Failure& failure) const {
  const auto message = error_message(failure.body);
  if (!message) return;
  failure.cause = *message + " (HTTP " + std::to_string(failure.status) + ")";
}

}  // namespace tensorstream::gcs
