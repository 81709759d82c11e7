#pragma once
// Entra ID tokens of a Kubernetes workload (AKS workload identity): the service account token
// that Kubernetes projects into the pod is exchanged for one of the application it federates
// with.

#include <chrono>
#include <string>

#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// The client credentials grant of application AZURE_CLIENT_ID in tenant AZURE_TENANT_ID, at
/// the tenant's token endpoint under AZURE_AUTHORITY_HOST, whose client assertion is the
/// content of AZURE_FEDERATED_TOKEN_FILE (surrounding white space dropped). The AKS workload
/// identity webhook sets the three variables.
class WorkloadIdentityProvider : public CredentialsProvider {
 public:
  /// `timeout` bounds each token request.
  explicit WorkloadIdentityProvider(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "workload identity".
  std::string name() const override;

  /// Reads the token file anew on every call, since Kubernetes rotates it in place. Not
  /// configured while one of the three variables is unset (the cause names it); once they
  /// are set, every failure is reported: an unreadable or empty file, an unreachable endpoint,
  /// Entra ID's OAuth error, e.g. "invalid_client: AADSTS70021: No matching federated identity
  /// record found...".
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::azure
