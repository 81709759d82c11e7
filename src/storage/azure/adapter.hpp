#pragma once
// The Blob Storage dialect of HTTP: every attempt dated, versioned and given a client request id,
// then authorized by whatever credentials the provider has (Shared Key, SAS or bearer token);
// messages from the XML error bodies.

#include <memory>
#include <string>

#include "storage/http/service_adapter.hpp"
#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// Authorizes requests to one storage account and reads its error bodies.
class Adapter final : public ServiceAdapter {
 public:
  /// Authorizes requests to `account` with what `credentials` gets; null `credentials` sends
  /// them anonymously (public containers).
  Adapter(std::string account, std::shared_ptr<CredentialsProvider> credentials);

  /// x-ms-date, x-ms-version and x-ms-client-request-id (traced), then "Authorization:
  /// SharedKey" or "Authorization: Bearer", or the SAS token as the query. Throws
  /// CredentialsError when the provider has no credentials or an account key is not base64.
  boost::asio::awaitable<Authorization> authorize(const RequestHead& head) override;

  /// "BlobNotFound: The specified blob does not exist. (HTTP 404)" from the error body, or
  /// "BlobNotFound (HTTP 404)" from the x-ms-error-code header of a response without one (HEAD);
  /// ServerBusy, OperationTimedOut and InternalError are retried, whatever their status.
  void interpret(Failure& failure) const override;

 private:
  std::string account_;
  std::shared_ptr<CredentialsProvider> credentials_;
};

}  // namespace tensorstream::azure
