// The AWS instances of the credential cache and chain, and the words of their messages.

#include "storage/credential_source.hpp"
#include "tensorstream/storage/s3/cached_provider.hpp"
#include "tensorstream/storage/s3/chain_provider.hpp"

namespace tensorstream {

template <>
struct CredentialWords<s3::Credentials> {
  static constexpr std::string_view service = "AWS";
  static constexpr std::string_view chain = "credential chain";
  static constexpr std::string_view nobody_has = "no provider has credentials";
  static constexpr std::string_view kept =
      "keeping AWS credentials that expire soon, refreshing them failed: ";
};

template class CachedCredentials<s3::Credentials>;
template class CredentialChain<s3::Credentials>;

}  // namespace tensorstream
