#pragma once
// Entra ID tokens of the managed identity of an Azure VM, scale set, AKS node, App Service or
// Functions app, from the endpoint the platform provides.

#include <chrono>
#include <string>

#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// Where IMDS, the instance metadata service of Azure VMs, answers.
inline constexpr std::string_view imds_authority = "http://169.254.169.254";

/// A token to Blob Storage for the managed identity, the user-assigned one whose client id is
/// AZURE_CLIENT_ID when that is set:
///
/// - App Service and Functions (IDENTITY_ENDPOINT and IDENTITY_HEADER set): GET
///   IDENTITY_ENDPOINT?api-version=2019-08-01&resource=... with X-IDENTITY-HEADER.
/// - Otherwise IMDS: GET /metadata/identity/oauth2/token?api-version=2018-02-01&resource=...
///   with `Metadata: true`, at AZURE_POD_IDENTITY_AUTHORITY_HOST when set (an http URL or
///   "host:port", as azure-identity takes it), else at imds_authority.
class ManagedIdentityProvider : public CredentialsProvider {
 public:
  /// `probe_timeout` bounds the one request to the default IMDS address, short since off Azure
  /// nothing answers there; `timeout` bounds each request to an endpoint the environment names.
  explicit ManagedIdentityProvider(
      std::chrono::milliseconds probe_timeout = std::chrono::seconds(1),
      std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "managed identity".
  std::string name() const override;

  /// Not configured when the default IMDS address is unreachable or answers with an error (a
  /// VM without an identity gets 400); an endpoint the environment names reports every failure.
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::chrono::milliseconds probe_timeout_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::azure
