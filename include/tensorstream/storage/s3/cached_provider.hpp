#pragma once
/// @file
/// Reuse of credentials until shortly before they expire.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Keeps the credentials another provider loaded and loads new ones only when they come within
/// `refresh_margin` of their expiration; credentials without an expiration are kept forever.
///
/// A refresh that fails while the old credentials are still valid logs a warning and returns
/// the old ones, so that a stream is not interrupted by a metadata endpoint's hiccup; the next
/// call tries again. While one call refreshes credentials that are still valid, concurrent calls
/// get the old ones instead of refreshing too; once they have expired, every call waits for a
/// refresh of its own.
class CachedProvider : public CredentialsProvider {
 public:
  /// The clock deciding when credentials are stale; tests substitute their own.
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  /// Caches what `inner` loads.
  explicit CachedProvider(
      std::shared_ptr<CredentialsProvider> inner,
      std::chrono::seconds refresh_margin = std::chrono::minutes(5),
      Clock clock = [] { return std::chrono::system_clock::now(); });

  /// The inner provider's name.
  std::string name() const override;

  /// The cached credentials, or fresh ones from the inner provider.
  boost::asio::awaitable<Credentials> load() override;

 private:
  std::shared_ptr<CredentialsProvider> inner_;
  std::chrono::seconds refresh_margin_;
  Clock clock_;
  std::mutex mutex_;
  std::optional<Credentials> cached_;
  bool refreshing_ = false;
};

}  // namespace tensorstream::s3
