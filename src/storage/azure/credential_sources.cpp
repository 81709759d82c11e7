// The Azure instances of the credential cache and chain, and the words of their messages.

#include "storage/credential_source.hpp"
#include "tensorstream/storage/azure/credentials_provider.hpp"

namespace tensorstream {

template <>
struct CredentialWords<azure::Credentials> {
  static constexpr std::string_view service = "Azure";
  static constexpr std::string_view chain = "credential chain";
  static constexpr std::string_view nobody_has = "no source has credentials";
  static constexpr std::string_view kept =
      "keeping an Azure access token that expires soon, refreshing it failed: ";
};

template class CachedCredentials<azure::Credentials>;
template class CredentialChain<azure::Credentials>;

}  // namespace tensorstream
