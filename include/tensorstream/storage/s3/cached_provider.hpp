#pragma once
/// @file
/// Reuse of credentials until shortly before they expire, with one refresh shared by all callers.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream {
template <class T>
class CredentialCache;
}

namespace tensorstream::s3 {

/// Keeps the credentials another provider loaded and loads new ones only when they come within
/// `refresh_margin` of their expiration (or half their remaining lifetime, when that is shorter,
/// so that short-lived credentials are not refreshed on every call); credentials without an
/// expiration are kept forever. The same rules as gcs::CachedProvider.
///
/// One refresh runs at a time. While it runs, concurrent callers get the old credentials if they
/// have not expired, or else wait for the refresh and share its outcome, its error included
/// (one STS or instance metadata request however many requests a stream has in flight). A
/// refresh that fails while the old credentials are still valid logs a warning and returns the
/// old ones, so that a stream is not interrupted by a metadata endpoint's hiccup; the next call
/// tries again. A waiting caller can be cancelled; when the caller running the refresh is
/// cancelled, a waiting caller starts another.
class TENSORSTREAM_API CachedProvider : public CredentialsProvider {
 public:
  /// The clock deciding when credentials are stale; tests substitute their own.
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  /// Caches what `inner` loads.
  explicit CachedProvider(
      std::shared_ptr<CredentialsProvider> inner,
      std::chrono::seconds refresh_margin = std::chrono::minutes(5),
      Clock clock = [] { return std::chrono::system_clock::now(); });

  ~CachedProvider() override;

  /// The inner provider's name.
  std::string name() const override;

  /// The cached credentials, or fresh ones from the inner provider.
  boost::asio::awaitable<Credentials> credentials() override;

 private:
  std::shared_ptr<CredentialsProvider> inner_;
  std::unique_ptr<CredentialCache<Credentials>> cache_;
};

}  // namespace tensorstream::s3
