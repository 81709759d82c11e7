#include "storage/s3/profile_provider.hpp"

#include "storage/s3/shared_profile.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

std::string ProfileProvider::name() const { return "shared files"; }

boost::asio::awaitable<Credentials> ProfileProvider::get() {
  SharedProfile profile;
  try {
    profile = load_shared_profile();
  } catch (const InvalidArgument& error) {
    throw CredentialsError("AWS", name(), error.what(), true);
  }
  const std::string what = "profile '" + profile.name + "'";
  if (!profile.found) {
    throw CredentialsError("AWS", name(), what + " not found in " + profile.files,
                           profile.explicitly_named);
  }
  const auto setting = [&](const char* key) {
    const auto found = profile.settings.find(key);
    return found == profile.settings.end() ? std::string() : found->second;
  };
  Credentials credentials;
  credentials.access_key_id = setting("aws_access_key_id");
  credentials.secret_access_key = setting("aws_secret_access_key");
  credentials.session_token = setting("aws_session_token");
  if (credentials.access_key_id.empty() && credentials.secret_access_key.empty()) {
    for (const char* unsupported :
         {"role_arn", "credential_process", "sso_session", "sso_start_url"}) {
      if (!setting(unsupported).empty()) {
        throw CredentialsError("AWS",
            name(), what + " uses " + unsupported + ", which tensorstream does not support", true);
      }
    }
    throw CredentialsError("AWS", name(),
                           what + " in " + profile.files + " has no aws_access_key_id",
                           profile.explicitly_named);
  }
  if (credentials.access_key_id.empty() || credentials.secret_access_key.empty()) {
    throw CredentialsError("AWS",
        name(),
        what + " in " + profile.files + " has " +
            (credentials.access_key_id.empty() ? "aws_secret_access_key but no aws_access_key_id"
                                               : "aws_access_key_id but no aws_secret_access_key"),
        true);
  }
  co_return credentials;
}

}  // namespace tensorstream::s3
