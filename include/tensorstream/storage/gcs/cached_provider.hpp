#pragma once
/// @file
/// Reuse of an access token until shortly before it expires, with one refresh shared by all
/// callers.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream {
template <class T>
class CredentialCache;
}

namespace tensorstream::gcs {

/// Keeps the token another provider got and gets a new one only when the old one comes within
/// `refresh_margin` of its expiration (or half its remaining lifetime, when that is shorter, so
/// that a short-lived token is not refreshed on every call); a token without an expiration is
/// kept forever. The same rules as s3::CachedProvider.
///
/// One refresh runs at a time. While it runs, concurrent callers get the old token if it still
/// works, or else wait for the refresh and share its outcome, its error included. A refresh that
/// fails while the old token still works logs a warning and returns the old token, so that a
/// stream is not interrupted by a token endpoint's hiccup; the next call tries again. A waiting
/// caller can be cancelled; when the caller running the refresh is cancelled, a waiting caller
/// starts another.
class TENSORSTREAM_API CachedProvider : public TokenProvider {
 public:
  /// The clock deciding when tokens are stale; tests substitute their own.
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  /// Caches what `inner` gets.
  explicit CachedProvider(
      std::shared_ptr<TokenProvider> inner,
      std::chrono::seconds refresh_margin = std::chrono::minutes(5),
      Clock clock = [] { return std::chrono::system_clock::now(); });

  ~CachedProvider() override;

  /// The inner provider's name.
  std::string name() const override;

  /// The cached token, or a fresh one from the inner provider.
  boost::asio::awaitable<AccessToken> token() override;

 private:
  std::shared_ptr<TokenProvider> inner_;
  std::unique_ptr<CredentialCache<AccessToken>> cache_;
};

}  // namespace tensorstream::gcs
