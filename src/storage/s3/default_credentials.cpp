#include "tensorstream/storage/s3/default_credentials.hpp"

#include "tensorstream/storage/s3/cached_provider.hpp"
#include "tensorstream/storage/s3/chain_provider.hpp"
#include "storage/s3/container_provider.hpp"
#include "storage/s3/environment_provider.hpp"
#include "storage/s3/imds_provider.hpp"
#include "storage/s3/profile_provider.hpp"
#include "storage/s3/web_identity_provider.hpp"

namespace tensorstream::s3 {

std::shared_ptr<CredentialsProvider> default_credentials_provider() {
  return std::make_shared<CachedProvider>(
      std::make_shared<ChainProvider>(std::vector<std::shared_ptr<CredentialsProvider>>{
          std::make_shared<EnvironmentProvider>(), std::make_shared<ProfileProvider>(),
          std::make_shared<WebIdentityProvider>(), std::make_shared<ContainerProvider>(),
          std::make_shared<ImdsProvider>()}));
}

}  // namespace tensorstream::s3
