#include "storage/gcs/metadata_server_provider.hpp"

#include <algorithm>
#include <cctype>

#include "storage/gcs/token_endpoint.hpp"
#include "storage/environment.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::gcs {
namespace {

constexpr std::string_view token_path =
    "/computeMetadata/v1/instance/service-accounts/default/token";

bool turned_off() {
  std::string value = environment("NO_GCE_CHECK");
  std::transform(value.begin(), value.end(), value.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return value == "true" || value == "1";
}

}  // namespace

MetadataServerProvider::MetadataServerProvider(std::chrono::milliseconds timeout)
    : timeout_(timeout) {}

std::string MetadataServerProvider::name() const { return "GCE metadata server"; }

boost::asio::awaitable<AccessToken> MetadataServerProvider::get() {
  if (turned_off()) throw CredentialsError("Google", name(), "turned off by NO_GCE_CHECK", false);
  std::string host = environment("GCE_METADATA_HOST");
  const bool configured = !host.empty();
  if (!configured) host = "169.254.169.254";
  const std::vector<std::pair<std::string, std::string>> headers{{"Metadata-Flavor", "Google"}};
  co_return co_await request_token(boost::beast::http::verb::get,
                                   "http://" + host + std::string(token_path), headers, "",
                                   timeout_, name(), configured);
}

}  // namespace tensorstream::gcs
