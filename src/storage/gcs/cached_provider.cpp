#include "tensorstream/storage/gcs/cached_provider.hpp"

#include "storage/credential_cache.hpp"

namespace tensorstream::gcs {

CachedProvider::CachedProvider(std::shared_ptr<TokenProvider> inner,
                               std::chrono::seconds refresh_margin, Clock clock)
    : inner_(inner),
      cache_(std::make_unique<CredentialCache<AccessToken>>(
          [inner] { return inner->token(); }, refresh_margin, std::move(clock),
          "keeping a Google access token that expires soon, refreshing it failed: ")) {}

CachedProvider::~CachedProvider() = default;

std::string CachedProvider::name() const { return inner_->name(); }

boost::asio::awaitable<AccessToken> CachedProvider::token() { return cache_->get(); }

}  // namespace tensorstream::gcs
