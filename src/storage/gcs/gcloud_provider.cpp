#include "storage/gcs/gcloud_provider.hpp"

#include "storage/environment.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "storage/gcs/credentials_file_provider.hpp"

namespace tensorstream::gcs {

GcloudProvider::GcloudProvider(std::chrono::milliseconds timeout) : timeout_(timeout) {}

std::string GcloudProvider::name() const { return "gcloud application default credentials"; }

std::filesystem::path GcloudProvider::path() {
  std::filesystem::path directory = environment("CLOUDSDK_CONFIG");
  if (directory.empty()) {
    const std::string home = environment("HOME");
    if (home.empty()) return {};
    directory = std::filesystem::path(home) / ".config" / "gcloud";
  }
  return directory / "application_default_credentials.json";
}

boost::asio::awaitable<AccessToken> GcloudProvider::get() {
  const std::filesystem::path file = path();
  if (file.empty()) throw CredentialsError("Google", name(),
                                           "neither CLOUDSDK_CONFIG nor HOME is set", false);
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    throw CredentialsError("Google", name(), file.string() + " does not exist", false);
  }
  CredentialsFileProvider provider(file, name(), timeout_);
  co_return co_await provider.get();
}

}  // namespace tensorstream::gcs
