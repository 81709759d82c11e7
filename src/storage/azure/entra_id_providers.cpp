#include "storage/azure/entra_id_providers.hpp"

#include "storage/azure/environment_provider.hpp"
#include "storage/azure/managed_identity_provider.hpp"
#include "storage/azure/workload_identity_provider.hpp"

namespace tensorstream::azure {

std::vector<std::shared_ptr<CredentialsProvider>> entra_id_providers() {
  return {std::make_shared<EnvironmentProvider>(), std::make_shared<WorkloadIdentityProvider>(),
          std::make_shared<ManagedIdentityProvider>()};
}

}  // namespace tensorstream::azure
