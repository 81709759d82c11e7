#include "tensorstream/storage/azure/default_credentials.hpp"

#include <utility>

#include "storage/azure/entra_id_providers.hpp"
#include "storage/azure/key_providers.hpp"

namespace tensorstream::azure {

std::shared_ptr<CredentialsProvider> default_credentials() {
  std::vector<std::shared_ptr<CredentialsProvider>> sources{
      std::make_shared<ConnectionStringProvider>(), std::make_shared<AccountKeyProvider>(),
      std::make_shared<SasTokenProvider>()};
  for (auto& source : entra_id_providers()) sources.push_back(std::move(source));
  return std::make_shared<CachedProvider>(std::make_shared<ChainProvider>(std::move(sources)));
}

std::shared_ptr<CredentialsProvider> fixed_credentials(Credentials credentials,
                                                       std::string name) {
  return std::make_shared<FixedProvider>(std::move(credentials), std::move(name));
}

}  // namespace tensorstream::azure
