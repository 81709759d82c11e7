#pragma once
// The Cloud Storage dialect of HTTP: a bearer token on every attempt, and messages from the JSON
// error bodies.

#include <memory>
#include <string>

#include "storage/http/service_adapter.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// Authorizes requests to the JSON API and reads its error bodies.
class Adapter final : public ServiceAdapter {
 public:
  /// Sends what `tokens` gets as a bearer token; null `tokens` sends requests without
  /// credentials (public buckets, emulators).
  explicit Adapter(std::shared_ptr<TokenProvider> tokens);

  /// "Authorization: Bearer TOKEN"; nothing without credentials. Throws CredentialsError when
  /// no token can be had.
  boost::asio::awaitable<Authorization> authorize(const RequestHead& head) override;

  /// "No such object: bucket/name (HTTP 404)" from the error body. Whether the failure is
  /// retried stays as the status decides: 408, 429 and 5xx are, 401 and 403 are not.
  void interpret(Failure& failure) const override;

 private:
  std::shared_ptr<TokenProvider> tokens_;
};

}  // namespace tensorstream::gcs
