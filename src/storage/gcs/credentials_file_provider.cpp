#include "storage/gcs/credentials_file_provider.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <variant>

#include "storage/gcs/credentials_file.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::gcs {
namespace {

std::unique_ptr<TokenProvider> make_provider(FileCredentials credentials,
                                             std::chrono::milliseconds timeout) {
  if (auto* key = std::get_if<ServiceAccountKey>(&credentials)) {
    return std::make_unique<ServiceAccountProvider>(std::move(*key), timeout);
  }
  return std::make_unique<AuthorizedUserProvider>(std::get<AuthorizedUser>(std::move(credentials)),
                                                  timeout);
}

}  // namespace

CredentialsFileProvider::CredentialsFileProvider(std::filesystem::path path, std::string name,
                                                 std::chrono::milliseconds timeout)
    : path_(std::move(path)), name_(std::move(name)), timeout_(timeout) {}

std::string CredentialsFileProvider::name() const { return name_; }

boost::asio::awaitable<AccessToken> CredentialsFileProvider::get() {
  const std::string path = path_.string();
  std::ifstream file(path_, std::ios::binary);
  if (!file) throw CredentialsError("Google", name_, path + ": " + std::strerror(errno), true);
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  if (file.bad()) throw CredentialsError("Google", name_, path + ": " + std::strerror(errno), true);
  std::unique_ptr<TokenProvider> provider;
  try {
    provider = make_provider(parse_credentials_file(text), timeout_);
  } catch (const InvalidArgument& error) {
    throw CredentialsError("Google", name_, path + ": " + error.what(), true);
  }
  try {
    co_return co_await provider->get();
  } catch (const CredentialsError& error) {
    throw CredentialsError("Google", name_,
                           path + " (" + error.provider() + "): " + error.cause(), true);
  }
}

}  // namespace tensorstream::gcs
