#pragma once
// Entra ID tokens of the application (service principal) the environment names, as
// azure-identity's EnvironmentCredential gets them.

#include <chrono>
#include <string>

#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// The client credentials grant of application AZURE_CLIENT_ID in tenant AZURE_TENANT_ID, at
/// the tenant's token endpoint under AZURE_AUTHORITY_HOST, for a token to Blob Storage. The
/// application proves itself with AZURE_CLIENT_SECRET or, when that is unset, with a JWT signed
/// by the key of AZURE_CLIENT_CERTIFICATE_PATH (a PEM file holding the certificate and its
/// private key, which AZURE_CLIENT_CERTIFICATE_PASSWORD decrypts when it is encrypted).
class EnvironmentProvider : public CredentialsProvider {
 public:
  /// `timeout` bounds each token request.
  explicit EnvironmentProvider(std::chrono::milliseconds timeout = std::chrono::seconds(10));

  /// "environment".
  std::string name() const override;

  /// Not configured while AZURE_TENANT_ID or AZURE_CLIENT_ID is unset, or both
  /// AZURE_CLIENT_SECRET and AZURE_CLIENT_CERTIFICATE_PATH are (the cause names what is
  /// missing); once they are set, every failure is reported: an unreadable certificate file,
  /// an unreachable endpoint, Entra ID's OAuth error, e.g. "invalid_client: AADSTS7000215:
  /// Invalid client secret provided...".
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::azure
