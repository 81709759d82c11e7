#include "tensorstream/storage/gcs/cached_provider.hpp"

#include <algorithm>
#include <exception>

#include "storage/gcs/shared_refresh.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/gcs/credentials_error.hpp"

namespace tensorstream::gcs {
namespace {

bool usable(const std::optional<AccessToken>& token, std::chrono::system_clock::time_point now) {
  return token && (!token->expiration || now < *token->expiration);
}

}  // namespace

CachedProvider::CachedProvider(std::shared_ptr<TokenProvider> inner,
                               std::chrono::seconds refresh_margin, Clock clock)
    : inner_(std::move(inner)),
      refresh_margin_(refresh_margin),
      clock_(std::move(clock)),
      refresh_(std::make_unique<SharedRefresh>()) {}

CachedProvider::~CachedProvider() = default;

std::string CachedProvider::name() const { return inner_->name(); }

std::optional<AccessToken> CachedProvider::fresh_token(std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mutex_);
  if (cached_ && now < refresh_at_) return cached_;
  return std::nullopt;
}

void CachedProvider::store(const AccessToken& token, std::chrono::system_clock::time_point now) {
  std::lock_guard lock(mutex_);
  cached_ = token;
  if (!token.expiration) {
    refresh_at_ = std::chrono::system_clock::time_point::max();
    return;
  }
  const auto lifetime = std::max(*token.expiration - now, std::chrono::system_clock::duration{});
  refresh_at_ = *token.expiration - std::min<std::chrono::system_clock::duration>(
                                        refresh_margin_, lifetime / 2);
}

boost::asio::awaitable<AccessToken> CachedProvider::token() {
  for (;;) {
    const auto now = clock_();
    if (auto token = fresh_token(now)) co_return *token;
    std::optional<AccessToken> current;
    {
      std::lock_guard lock(mutex_);
      if (usable(cached_, now)) current = cached_;
    }
    if (auto claim = refresh_->claim()) {
      // A refresh that ended between the look above and the claim needs no successor.
      if (auto token = fresh_token(clock_())) {
        claim->succeed(*token);
        co_return *token;
      }
      try {
        AccessToken fresh = co_await inner_->token();
        store(fresh, clock_());
        claim->succeed(fresh);
        co_return fresh;
      } catch (const CredentialsError& error) {
        claim->fail(std::current_exception());
        if (!usable(current, clock_())) throw;
        log(LogLevel::warning,
            std::string("keeping a Google access token that expires soon, refreshing it failed: ") +
                error.what());
        co_return *current;
      }
    }
    if (current) co_return *current;
    // Without a usable token there is nothing to do but wait for the refresh in flight; one that
    // was abandoned (its caller cancelled) leaves the next look to start another.
    if (auto token = co_await refresh_->join()) co_return *token;
  }
}

}  // namespace tensorstream::gcs
