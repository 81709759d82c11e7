#pragma once
/// @file
/// Where a cloud's credentials come from, for every cloud alike: a source of one kind of
/// credentials (s3::Credentials, gcs::AccessToken), a cache in front of one, and a chain that
/// tries several in order. Each cloud names them for itself: s3::CredentialsProvider,
/// s3::CachedProvider and s3::ChainProvider; gcs::TokenProvider, gcs::CachedProvider and
/// gcs::ChainProvider.

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"

namespace tensorstream {

template <class T>
class CredentialCache;

/// A source of credentials: the environment, a file, an HTTP endpoint. `Credentials` has a
/// member `std::optional<std::chrono::system_clock::time_point> expiration`.
///
/// Implementations read their configuration (environment variables, files) on every get(), so
/// that a chain built once follows later changes; get() may be called concurrently.
template <class Credentials>
class CredentialSource {
 public:
  virtual ~CredentialSource() = default;

  /// The name used in errors, e.g. "environment" or "GCE metadata server".
  virtual std::string name() const = 0;

  /// Fetches credentials. Throws CredentialsError naming this source when there are none.
  virtual boost::asio::awaitable<Credentials> get() = 0;
};

/// Keeps the credentials another source got, and gets new ones only when they come within
/// `refresh_margin` of their expiration (or half their remaining lifetime, when that is shorter,
/// so that short-lived credentials are not refreshed on every call); credentials without an
/// expiration are kept forever.
///
/// One refresh runs at a time. While it runs, concurrent callers get the old credentials if they
/// have not expired, or else wait for the refresh and share its outcome, its error included (one
/// STS, token endpoint or instance metadata request however many requests a stream has in
/// flight). A refresh that fails while the old credentials are still valid logs a warning and
/// returns the old ones, so that a stream is not interrupted by an endpoint's hiccup; the next
/// call tries again. A waiting caller can be cancelled; when the caller running the refresh is
/// cancelled, a waiting caller starts another.
template <class Credentials>
class TENSORSTREAM_API CachedCredentials final : public CredentialSource<Credentials> {
 public:
  /// The clock deciding when credentials are stale; tests substitute their own.
  using Clock = std::function<std::chrono::system_clock::time_point()>;

  /// Caches what `inner` gets.
  explicit CachedCredentials(
      std::shared_ptr<CredentialSource<Credentials>> inner,
      std::chrono::seconds refresh_margin = std::chrono::minutes(5),
      Clock clock = [] { return std::chrono::system_clock::now(); });
  ~CachedCredentials() override;

  /// The inner source's name.
  std::string name() const override;

  /// The cached credentials, or fresh ones from the inner source.
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::shared_ptr<CredentialSource<Credentials>> inner_;
  std::unique_ptr<CredentialCache<Credentials>> cache_;
};

/// Returns the credentials of the first source that has some. A source that is absent
/// (CredentialsError::configured() false) passes to the next; one that is set up but broken
/// ends the search with its own error, as the clouds' SDKs do.
template <class Credentials>
class TENSORSTREAM_API CredentialChain final : public CredentialSource<Credentials> {
 public:
  /// Tries `sources` in this order.
  explicit CredentialChain(std::vector<std::shared_ptr<CredentialSource<Credentials>>> sources);

  /// The chain's name: "credential chain" (AWS), "application default credentials" (Google).
  std::string name() const override;

  /// When no source has credentials, throws CredentialsError (not configured) whose cause lists
  /// every source with its reason, e.g. "environment: AWS_ACCESS_KEY_ID is not set; shared
  /// files: ...".
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::vector<std::shared_ptr<CredentialSource<Credentials>>> sources_;
};

}  // namespace tensorstream
