// The Google instances of the credential cache and chain, and the words of their messages.

#include "storage/credential_source.hpp"
#include "tensorstream/storage/gcs/cached_provider.hpp"
#include "tensorstream/storage/gcs/chain_provider.hpp"

namespace tensorstream {

template <>
struct CredentialWords<gcs::AccessToken> {
  static constexpr std::string_view service = "Google";
  static constexpr std::string_view chain = "application default credentials";
  static constexpr std::string_view nobody_has = "no source has credentials";
  static constexpr std::string_view kept =
      "keeping a Google access token that expires soon, refreshing it failed: ";
};

template class CachedCredentials<gcs::AccessToken>;
template class CredentialChain<gcs::AccessToken>;

}  // namespace tensorstream
