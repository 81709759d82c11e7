#pragma once
// The member definitions of CachedCredentials and CredentialChain. Each cloud's folder
// instantiates them for its credentials, next to the words its messages use for them
// (CredentialWords), in one source file of its own.

#include <string>
#include <string_view>
#include <utility>

#include "storage/credential_cache.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/credential_source.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream {

/// How one cloud's messages speak of its credentials; specialized by each cloud. Members:
/// `service` ("AWS"), `chain` (the chain's name), `nobody_has` (what an empty chain says, "no
/// provider has credentials") and `kept` (the warning prefix when a refresh failed and the old
/// credentials are kept).
template <class Credentials>
struct CredentialWords;

template <class Credentials>
CachedCredentials<Credentials>::CachedCredentials(
    std::shared_ptr<CredentialSource<Credentials>> inner, std::chrono::seconds refresh_margin,
    Clock clock)
    : inner_(inner),
      cache_(std::make_unique<CredentialCache<Credentials>>(
          [inner] { return inner->get(); }, refresh_margin, std::move(clock),
          std::string(CredentialWords<Credentials>::kept))) {}

template <class Credentials>
CachedCredentials<Credentials>::~CachedCredentials() = default;

template <class Credentials>
std::string CachedCredentials<Credentials>::name() const {
  return inner_->name();
}

template <class Credentials>
boost::asio::awaitable<Credentials> CachedCredentials<Credentials>::get() {
  return cache_->get();
}

template <class Credentials>
CredentialChain<Credentials>::CredentialChain(
    std::vector<std::shared_ptr<CredentialSource<Credentials>>> sources)
    : sources_(std::move(sources)) {}

template <class Credentials>
std::string CredentialChain<Credentials>::name() const {
  return std::string(CredentialWords<Credentials>::chain);
}

template <class Credentials>
boost::asio::awaitable<Credentials> CredentialChain<Credentials>::get() {
  using Words = CredentialWords<Credentials>;
  std::string reasons;
  for (const auto& source : sources_) {
    try {
      Credentials found = co_await source->get();
      log(LogLevel::debug,
          [&] { return std::string(Words::service) + " credentials from " + source->name(); });
      co_return found;
    } catch (const CredentialsError& error) {
      if (error.configured()) throw;
      if (!reasons.empty()) reasons += "; ";
      reasons += error.provider() + ": " + error.cause();
    }
  }
  throw CredentialsError(std::string(Words::service), name(),
                         std::string(Words::nobody_has) + " (" + reasons + ")", false);
}

}  // namespace tensorstream
