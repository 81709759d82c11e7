#include "tensorstream/storage/azure_store.hpp"

#include <array>
#include <optional>
#include <utility>

#include "storage/azure/adapter.hpp"
#include "storage/azure/blob_api.hpp"
#include "storage/azure/connection_string.hpp"
#include "storage/azure/writer.hpp"
#include "storage/bucket_listing.hpp"
#include "storage/builtin_schemes.hpp"
#include "storage/environment.hpp"
#include "storage/http/http_client.hpp"
#include "storage/response_version.hpp"
#include "storage/percent_decode.hpp"
#include "storage/s3/sigv4.hpp"
#include "storage/request_checks.hpp"
#include "storage/service_endpoint.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/azure/default_credentials.hpp"

namespace tensorstream {
namespace {

// Blob properties come as headers; listings are pages of at most 5000 names of at most 1 KiB
// each, with their properties.
constexpr std::size_t max_list_page = 16 << 20;
constexpr std::uint32_t max_list_results = 5000;

const Url& checked_url(const Url& url) {
  if (url.scheme != "az" && url.scheme != "http" && url.scheme != "https") {
    throw InvalidArgument(url.str() + ": AzureStore serves az:// and blob endpoint URLs only");
  }
  return url;
}

// The hosts of Azure's public and sovereign clouds' blob endpoints.
constexpr std::array<std::string_view, 4> blob_host_suffixes{
    ".blob.core.windows.net", ".blob.core.chinacloudapi.cn", ".blob.core.usgovcloudapi.net",
    ".blob.core.cloudapi.de"};

struct Endpoint {
  Url origin;
  std::string path_prefix;  // "/devstoreaccount1" of an emulator; empty on Azure.
  std::string account;
};

// The account the endpoint names: the first label of "ACCOUNT.blob.core.windows.net", else the
// first segment of an emulator's path.
std::string account_of(const Endpoint& endpoint) {
  const std::string& host = endpoint.origin.host;
  if (const auto dot = host.find(".blob."); dot != std::string::npos && dot > 0) {
    return host.substr(0, dot);
  }
  const std::string_view path = endpoint.path_prefix;
  if (path.size() > 1) return std::string(path.substr(1, path.find('/', 1) - 1));
  return {};
}

std::optional<azure::ConnectionString> environment_connection_string() {
  const std::string text = environment("AZURE_STORAGE_CONNECTION_STRING");
  if (text.empty()) return std::nullopt;
  return azure::parse_connection_string(text, "AZURE_STORAGE_CONNECTION_STRING");
}

// The blob endpoint configured by the options or the connection string, with where it came from;
// empty when neither names one.
std::pair<std::string, std::string> configured_endpoint(
    const AzureOptions& options, const std::optional<azure::ConnectionString>& connection) {
  if (!options.endpoint.empty()) return {options.endpoint, "AzureOptions::endpoint"};
  if (connection && !connection->blob_endpoint.empty()) {
    return {connection->blob_endpoint, "AZURE_STORAGE_CONNECTION_STRING's BlobEndpoint"};
  }
  return {};
}

// Whether `url` lies under the endpoint `text`: same origin, and the endpoint's path a prefix of
// the URL's at a segment boundary.
bool under_endpoint(const Url& url, const std::string& text) {
  Url endpoint;
  try {
    endpoint = Url::parse(text);
  } catch (const InvalidArgument&) {
    return false;
  }
  std::string path = endpoint.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  return endpoint.origin() == url.origin() && url.path.starts_with(path + "/");
}

Endpoint resolve_endpoint(const Url& container, const AzureOptions& options) {
  const auto connection = environment_connection_string();
  Endpoint endpoint;
  endpoint.account = options.account;
  if (endpoint.account.empty() && connection) endpoint.account = connection->account;
  if (endpoint.account.empty()) endpoint.account = environment("AZURE_STORAGE_ACCOUNT");
  auto [text, source] = configured_endpoint(options, connection);
  const bool own_endpoint = container.scheme != "az" && !under_endpoint(container, text);
  if (own_endpoint) {
    // A blob endpoint URL names its endpoint and account: https://ACCOUNT.blob.core.windows.net.
    text = container.origin();
    source = container.origin();
  }
  if (text.empty()) {
    if (endpoint.account.empty()) {
      throw StorageError(container.str(),
                         "no storage account: set AZURE_STORAGE_ACCOUNT or "
                         "AZURE_STORAGE_CONNECTION_STRING, or give --account");
    }
    text = "https://" + endpoint.account + ".blob.core.windows.net";
    source = "the account's endpoint";
  }
  ServiceEndpoint parsed = parse_service_endpoint(text, source, "the blob endpoint");
  endpoint.origin = std::move(parsed.origin);
  endpoint.path_prefix = std::move(parsed.path_prefix);
  if (endpoint.account.empty() || own_endpoint) {
    if (std::string named = account_of(endpoint); !named.empty()) endpoint.account = named;
  }
  if (endpoint.account.empty()) {
    throw StorageError(container.str(),
                       "no storage account: " + endpoint.origin.str() +
                           " names none; set AZURE_STORAGE_ACCOUNT or give --account");
  }
  return endpoint;
}

std::shared_ptr<azure::CredentialsProvider> credentials_of(const Url& url,
                                                          const AzureOptions& options) {
  if (options.anonymous) return nullptr;
  if (options.credentials) return options.credentials;
  // A SAS URL, as the portal and `az storage blob generate-sas --full-uri` give them.
  if (url.query.find("sig=") != std::string::npos) {
    return azure::fixed_credentials({azure::Credentials::Kind::sas, url.query},
                                    "the URL's SAS token");
  }
  return azure::default_credentials();
}

// The pages of a List Blobs listing of `listed` (the prefix's URL), delimited by '/' or not.
// What it refers to must outlive the listing.
PageFetcher page_fetcher(HttpClient& client, const std::string& path_prefix,
                         const std::string& container, const std::string& listed,
                         std::uint32_t page_size, bool delimited) {
  return [&client, &path_prefix, &container, &listed, page_size, delimited](
             const std::string& name_prefix,
             const std::optional<std::string>& marker) -> boost::asio::awaitable<ListingPage> {
    const std::string target =
        path_prefix +
        azure::list_blobs_target(container, name_prefix, delimited, page_size, marker);
    const std::string body = co_await client.get_text(target, listed, max_list_page);
    co_return azure::parse_blob_list(body, listed);
  };
}

}  // namespace

struct AzureStore::Impl {
  // An az:// store serves one container and its keys are blob names; a blob endpoint URL's
  // store serves the account, and its keys (URL paths) start with the endpoint's path and the
  // container.
  std::optional<std::string> container;
  std::string url_prefix;                 // "az://container", or the endpoint's origin.
  std::string identity_prefix;            // The container's address, account included.
  boost::asio::any_io_executor executor;  // Where destroyed writers cancel their blocks.
  std::string path_prefix;                // Of the endpoint: every request target starts with it.
  std::uint32_t list_page_size = max_list_results;
  std::string description;
  std::shared_ptr<HttpClient> client;  // Shared with writers, which end in the background.
  ObjectPins<ResponseVersion> pins;

  // A key's container, and the key within it ("/name", names decoded in URL paths).
  struct Blob {
    std::string container;
    std::string key;
  };

  Blob locate(const std::string& url, const std::string& key) const {
    if (container) return {*container, key};
    std::string_view rest = key;
    if (!path_prefix.empty() && rest.starts_with(path_prefix)) {
      rest.remove_prefix(path_prefix.size());
    }
    const auto slash = rest.size() > 1 ? rest.find('/', 1) : std::string_view::npos;
    if (rest.empty() || rest.front() != '/' || slash == std::string_view::npos) {
      throw InvalidArgument(url + ": a blob URL names a container and a blob or prefix: " +
                            url_prefix + path_prefix + "/CONTAINER/NAME");
    }
    return {std::string(rest.substr(1, slash - 1)), percent_decode(rest.substr(slash))};
  }

  // Store keys of the container's `key`s.
  std::string key_of(const std::string& blob_container, const std::string& key) const {
    if (container) return key;
    return path_prefix + "/" + blob_container + s3::uri_encode(key, true);
  }

  std::string target(const Blob& blob) const {
    return path_prefix + azure::blob_target(blob.container, std::string_view(blob.key).substr(1));
  }

  // The store keys of what a listing of `blob_container` found.
  template <class Entries>
  void rekey(const std::string& blob_container, Entries& entries) const {
    if (container) return;
    for (auto& entry : entries) {
      if constexpr (requires { entry.key; }) {
        entry.key = key_of(blob_container, entry.key);
      } else {
        entry = key_of(blob_container, entry);
      }
    }
  }
};

AzureStore::AzureStore(boost::asio::any_io_executor executor, const Url& container,
                       HttpOptions http, AzureOptions options)
    : impl_(std::make_unique<Impl>()) {
  checked_url(container);
  impl_->executor = executor;
  if (options.list_page_size == 0 || options.list_page_size > max_list_results) {
    throw InvalidArgument(container.str() + ": list_page_size must be 1 to 5000");
  }
  impl_->list_page_size = options.list_page_size;
  const Endpoint endpoint = resolve_endpoint(container, options);
  const auto credentials = credentials_of(container, options);
  impl_->path_prefix = endpoint.path_prefix;
  if (container.scheme == "az") {
    impl_->container = container.host;
    impl_->url_prefix = "az://" + container.host;
    impl_->identity_prefix =
        endpoint.origin.origin() + endpoint.path_prefix + "/" + container.host;
  } else {
    impl_->url_prefix = container.origin();
    impl_->identity_prefix = impl_->url_prefix;
  }
  impl_->description = endpoint.origin.origin() + endpoint.path_prefix + " (account " +
                       endpoint.account + ", " +
                       (credentials ? "credentials: " + credentials->name()
                                    : std::string("without credentials")) +
                       ")";
  log(LogLevel::debug, [&] {
    return impl_->url_prefix + ": Azure blob endpoint " + impl_->description;
  });
  impl_->client = std::make_shared<HttpClient>(
      std::move(executor), endpoint.origin, std::move(http),
      std::make_shared<azure::Adapter>(endpoint.account, credentials));
}

AzureStore::~AzureStore() = default;

const std::string& AzureStore::describe() const { return impl_->description; }

std::string AzureStore::url(const std::string& key) const { return impl_->url_prefix + key; }

std::string AzureStore::object_identity(const std::string& key) const {
  return impl_->identity_prefix + key;
}

boost::asio::awaitable<ObjectStat> AzureStore::stat(std::string key) {
  return pinned_stat(*this, impl_->pins, std::move(key));
}

boost::asio::awaitable<std::uint64_t> AzureStore::size(std::string key) {
  const std::string object = url(key);
  const Impl::Blob blob = impl_->locate(object, key);
  check_bucket_key(object, blob.key, "Azure");
  const std::string target = impl_->target(blob);
  ResponseVersion version;
  const std::uint64_t size = co_await impl_->client->content_length(target, object, version);
  version.size = size;
  pin_version(impl_->pins, key, object, version);
  co_return size;
}

boost::asio::awaitable<std::vector<ObjectInfo>> AzureStore::list(std::string prefix,
                                                                 ListDepth depth) {
  const std::string listed = url(prefix);
  const Impl::Blob blob = impl_->locate(listed, prefix);
  auto objects = co_await list_bucket(
      listed, "Azure", blob.key,
      page_fetcher(*impl_->client, impl_->path_prefix, blob.container, listed,
                   impl_->list_page_size, depth == ListDepth::one_level));
  impl_->rekey(blob.container, objects);
  co_return objects;
}

boost::asio::awaitable<Listing> AzureStore::list_level(std::string prefix) {
  const std::string listed = url(prefix);
  const Impl::Blob blob = impl_->locate(listed, prefix);
  Listing level = co_await list_bucket_level(
      listed, "Azure", blob.key,
      page_fetcher(*impl_->client, impl_->path_prefix, blob.container, listed,
                   impl_->list_page_size, true));
  impl_->rekey(blob.container, level.objects);
  impl_->rekey(blob.container, level.prefixes);
  co_return level;
}

boost::asio::awaitable<void> AzureStore::read_range(std::string key, std::uint64_t offset,
                                                    std::span<std::byte> destination) {
  const std::string object = url(key);
  const Impl::Blob blob = impl_->locate(object, key);
  check_bucket_key(object, blob.key, "Azure");
  if (destination.empty()) co_return;
  check_byte_range(object, offset, destination.size());
  ResponseVersion version = impl_->pins.find(key).value_or(ResponseVersion{});
  const std::string target = impl_->target(blob);
  co_await impl_->client->read_range(target, object, offset, destination, version);
  pin_version(impl_->pins, key, object, version);
}

StoreStats AzureStore::stats() const { return impl_->client->stats(); }

std::unique_ptr<ObjectWriter> AzureStore::create_writer(std::string key, WriteOptions options) {
  const std::string object = url(key);
  const Impl::Blob blob = impl_->locate(object, key);
  check_bucket_key(object, blob.key, "Azure");
  if (blob.key.back() == '/') {
    throw InvalidArgument(object + ": a blob to write needs a name, not a prefix");
  }
  return std::make_unique<azure::Writer>(impl_->client, impl_->executor, impl_->target(blob),
                                         object, options);
}

bool is_azure_blob_url(const Url& url, const StoreOptions& options) {
  if (url.scheme != "http" && url.scheme != "https") return false;
  for (const auto suffix : blob_host_suffixes) {
    if (url.host.ends_with(suffix) && url.host.size() > suffix.size()) return true;
  }
  const auto connection = environment_connection_string();
  const auto configured = configured_endpoint(options.azure(), connection).first;
  return !configured.empty() && under_endpoint(url, configured);
}

std::unique_ptr<ObjectStore> open_azure_store(const Url& url,
                                              boost::asio::any_io_executor executor,
                                              const StoreOptions& options) {
  return std::make_unique<AzureStore>(std::move(executor), url, options.http(), options.azure());
}

void apply_azure_settings(const CommonStoreSettings& settings, StoreOptions& options) {
  AzureOptions& azure = options.azure();
  if (settings.anonymous) azure.anonymous = true;
  if (!settings.account.empty()) azure.account = settings.account;
  if (!settings.endpoint.empty()) azure.endpoint = settings.endpoint;
}

}  // namespace tensorstream
