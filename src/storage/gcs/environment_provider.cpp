#include "storage/gcs/environment_provider.hpp"

#include "storage/environment.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "storage/gcs/credentials_file_provider.hpp"

namespace tensorstream::gcs {

EnvironmentProvider::EnvironmentProvider(std::chrono::milliseconds timeout) : timeout_(timeout) {}

std::string EnvironmentProvider::name() const { return "GOOGLE_APPLICATION_CREDENTIALS"; }

boost::asio::awaitable<AccessToken> EnvironmentProvider::get() {
  const std::string path = environment("GOOGLE_APPLICATION_CREDENTIALS");
  if (path.empty()) throw CredentialsError("Google", name(), "the variable is not set", false);
  CredentialsFileProvider file(path, name(), timeout_);
  co_return co_await file.get();
}

}  // namespace tensorstream::gcs
