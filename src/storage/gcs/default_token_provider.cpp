#include "tensorstream/storage/gcs/default_token_provider.hpp"

#include <utility>

#include "storage/gcs/credentials_file_provider.hpp"
#include "storage/gcs/environment_provider.hpp"
#include "storage/gcs/gcloud_provider.hpp"
#include "storage/gcs/metadata_server_provider.hpp"
#include "tensorstream/storage/gcs/cached_provider.hpp"
#include "tensorstream/storage/gcs/chain_provider.hpp"

namespace tensorstream::gcs {

std::shared_ptr<TokenProvider> default_token_provider() {
  return std::make_shared<CachedProvider>(
      std::make_shared<ChainProvider>(std::vector<std::shared_ptr<TokenProvider>>{
          std::make_shared<EnvironmentProvider>(), std::make_shared<GcloudProvider>(),
          std::make_shared<MetadataServerProvider>()}));
}

std::shared_ptr<TokenProvider> credentials_file_token_provider(std::filesystem::path path) {
  return std::make_shared<CachedProvider>(
      std::make_shared<CredentialsFileProvider>(std::move(path)));
}

}  // namespace tensorstream::gcs
