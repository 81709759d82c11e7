#pragma once
/// @file
/// The credentials an AzureStore uses when the program names none.

#include <memory>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// The chain of the Azure SDKs and CLI, tried in this order, each source's configuration read
/// anew on every refresh: AZURE_STORAGE_CONNECTION_STRING (AccountKey or
/// SharedAccessSignature), AZURE_STORAGE_KEY, AZURE_STORAGE_SAS_TOKEN, then Entra ID tokens as
/// DefaultAzureCredential gets them: the environment (AZURE_TENANT_ID, AZURE_CLIENT_ID and
/// AZURE_CLIENT_SECRET or AZURE_CLIENT_CERTIFICATE_PATH), workload identity
/// (AZURE_FEDERATED_TOKEN_FILE, as on AKS) and managed identity (IDENTITY_ENDPOINT on App
/// Service, else the instance metadata service), all honouring AZURE_AUTHORITY_HOST. Tokens are
/// cached and refreshed before they expire by one request however many are in flight.
TENSORSTREAM_API std::shared_ptr<CredentialsProvider> default_credentials();

/// Always `credentials` (an account key, a SAS token, a bearer token), reported as coming from
/// `name`.
TENSORSTREAM_API std::shared_ptr<CredentialsProvider> fixed_credentials(Credentials credentials,
                                                                        std::string name);

}  // namespace tensorstream::azure
