#pragma once
/// @file
/// Reuse of an access token until shortly before it expires.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

class SharedRefresh;

/// Keeps the token another provider got and gets a new one only when the old one comes within
/// `refresh_margin` of its expiration (or half its remaining lifetime, when that is shorter, so
/// that a short-lived token is not refreshed on every call); a token without an expiration is
/// kept forever.
///
/// One refresh runs at a time. While it runs, concurrent callers get the old token if it still
/// works, or else wait for the refresh and share its outcome, its error included. A refresh that
/// fails while the old token still works logs a warning and returns the old token, so that a
/// stream is not interrupted by a token endpoint's hiccup; the next call tries again. A waiting
/// caller can be cancelled.
class CachedProvider : public TokenProvider {
 public:
  /// The clock deciding when tokens are stale; tests substitute their own.
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  /// Caches what `inner` gets.
  explicit CachedProvider(
      std::shared_ptr<TokenProvider> inner,
      std::chrono::seconds refresh_margin = std::chrono::minutes(5),
      Clock clock = [] { return std::chrono::system_clock::now(); });

  /// Every call must have finished.
  ~CachedProvider() override;

  /// The inner provider's name.
  std::string name() const override;

  /// The cached token, or a fresh one from the inner provider.
  boost::asio::awaitable<AccessToken> token() override;

 private:
  // The cached token while it is fresh enough; a copy, so that no call returns a token another
  // call is replacing.
  std::optional<AccessToken> fresh_token(std::chrono::system_clock::time_point now);
  void store(const AccessToken& token, std::chrono::system_clock::time_point now);

  std::shared_ptr<TokenProvider> inner_;
  std::chrono::seconds refresh_margin_;
  Clock clock_;
  std::mutex mutex_;
  std::optional<AccessToken> cached_;
  std::chrono::system_clock::time_point refresh_at_;
  std::unique_ptr<SharedRefresh> refresh_;
};

}  // namespace tensorstream::gcs
