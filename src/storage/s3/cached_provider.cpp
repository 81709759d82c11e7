#include "tensorstream/storage/s3/cached_provider.hpp"

#include "tensorstream/log.hpp"
#include "tensorstream/storage/s3/credentials_error.hpp"

namespace tensorstream::s3 {

CachedProvider::CachedProvider(std::shared_ptr<CredentialsProvider> inner,
                               std::chrono::seconds refresh_margin, Clock clock)
    : inner_(std::move(inner)), refresh_margin_(refresh_margin), clock_(std::move(clock)) {}

std::string CachedProvider::name() const { return inner_->name(); }

boost::asio::awaitable<Credentials> CachedProvider::load() {
  const auto now = clock_();
  std::optional<Credentials> current;
  bool reuse = false;
  {
    std::lock_guard lock(mutex_);
    current = cached_;
    const bool fresh_enough =
        current && (!current->expiration || now < *current->expiration - refresh_margin_);
    const bool usable = current && current->expiration && now < *current->expiration;
    // Every request of a stream asks for credentials; one refresh at a time is enough while the
    // old ones still work.
    reuse = fresh_enough || (usable && refreshing_);
    if (!reuse) refreshing_ = true;
  }
  if (reuse) co_return *current;
  // Clears the flag however the refresh ends, also when the coroutine is destroyed.
  struct RefreshDone {
    CachedProvider& self;
    ~RefreshDone() {
      std::lock_guard lock(self.mutex_);
      self.refreshing_ = false;
    }
  } done{*this};

  Credentials fresh;
  try {
    fresh = co_await inner_->load();
  } catch (const CredentialsError& error) {
    if (!current || !current->expiration || now >= *current->expiration) throw;
    log(LogLevel::warning,
        std::string("keeping AWS credentials that expire soon, refreshing them failed: ") +
            error.what());
    co_return *current;
  }
  {
    std::lock_guard lock(mutex_);
    cached_ = fresh;
  }
  co_return fresh;
}

}  // namespace tensorstream::s3
