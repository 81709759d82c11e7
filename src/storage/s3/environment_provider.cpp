#include "storage/s3/environment_provider.hpp"

#include "storage/environment.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::s3 {

std::string EnvironmentProvider::name() const { return "environment"; }

boost::asio::awaitable<Credentials> EnvironmentProvider::get() {
  Credentials credentials;
  credentials.access_key_id = environment("AWS_ACCESS_KEY_ID");
  credentials.secret_access_key = environment("AWS_SECRET_ACCESS_KEY");
  credentials.session_token = environment("AWS_SESSION_TOKEN");
  if (credentials.access_key_id.empty() && credentials.secret_access_key.empty()) {
    throw CredentialsError("AWS", name(), "AWS_ACCESS_KEY_ID is not set", false);
  }
  if (credentials.secret_access_key.empty()) {
    throw CredentialsError("AWS", name(),
                           "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
                           true);
  }
  if (credentials.access_key_id.empty()) {
    throw CredentialsError("AWS", name(),
                           "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not",
                           true);
  }
  co_return credentials;
}

}  // namespace tensorstream::s3
