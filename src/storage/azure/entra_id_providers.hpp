#pragma once
// The Entra ID part of the chain of Azure credentials.

#include <memory>
#include <vector>

#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream::azure {

/// The sources of Entra ID tokens, in DefaultAzureCredential's order: EnvironmentProvider,
/// WorkloadIdentityProvider, ManagedIdentityProvider. A full chain puts them after the account
/// key and SAS sources, which need no token request.
std::vector<std::shared_ptr<CredentialsProvider>> entra_id_providers();

}  // namespace tensorstream::azure
