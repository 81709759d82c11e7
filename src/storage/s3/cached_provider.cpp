#include "tensorstream/storage/s3/cached_provider.hpp"

#include "storage/credential_cache.hpp"

namespace tensorstream::s3 {

CachedProvider::CachedProvider(std::shared_ptr<CredentialsProvider> inner,
                               std::chrono::seconds refresh_margin, Clock clock)
    : inner_(inner),
      cache_(std::make_unique<CredentialCache<Credentials>>(
          [inner] { return inner->credentials(); }, refresh_margin, std::move(clock),
          "keeping AWS credentials that expire soon, refreshing them failed: ")) {}

CachedProvider::~CachedProvider() = default;

std::string CachedProvider::name() const { return inner_->name(); }

boost::asio::awaitable<Credentials> CachedProvider::credentials() { return cache_->get(); }

}  // namespace tensorstream::s3
