#include "tensorstream/storage/gcs_store.hpp"

#include <optional>
#include <utility>

#include "storage/builtin_schemes.hpp"
#include "storage/bucket_listing.hpp"
#include "storage/environment.hpp"
#include "storage/gcs/adapter.hpp"
#include "storage/gcs/json_api.hpp"
#include "storage/gcs/writer.hpp"
#include "storage/http/http_client.hpp"
#include "storage/response_version.hpp"
#include "storage/request_checks.hpp"
#include "storage/service_endpoint.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/gcs/default_token_provider.hpp"

namespace tensorstream {
namespace {

constexpr std::string_view google_endpoint = "https://storage.googleapis.com";

// Metadata asked for is the size and generation; listings are pages of at most 1000 names of at most
// 1 KiB each, with sizes.
constexpr std::size_t max_metadata = 64 << 10;
constexpr std::size_t max_list_page = 4 << 20;

const Url& checked_bucket(const Url& bucket) {
  if (bucket.scheme != "gs") {
    throw InvalidArgument(bucket.str() + ": GcsStore serves gs:// URLs only");
  }
  return bucket;
}

struct Endpoint {
  Url origin;
  std::string path_prefix;
  bool emulator = false;
};

Endpoint resolve_endpoint(const GcsOptions& options) {
  std::string text = options.endpoint;
  std::string source = "GcsOptions::endpoint";
  Endpoint endpoint;
  if (text.empty()) {
    text = environment("STORAGE_EMULATOR_HOST");
    source = "STORAGE_EMULATOR_HOST";
    endpoint.emulator = !text.empty();
    // The SDKs accept the emulator as "host:port", which is plain http.
    if (endpoint.emulator && text.find("://") == std::string::npos) text = "http://" + text;
  }
  if (text.empty()) text = google_endpoint;
  ServiceEndpoint parsed = parse_service_endpoint(text, source, "the JSON API endpoint");
  endpoint.origin = std::move(parsed.origin);
  endpoint.path_prefix = std::move(parsed.path_prefix);
  return endpoint;
}

std::shared_ptr<gcs::TokenProvider> token_provider(const GcsOptions& options, bool emulator) {
  if (options.anonymous) return nullptr;
  if (options.token_provider) return options.token_provider;
  // Emulators accept any request, and a machine running tests has no credentials to find.
  if (emulator) return nullptr;
  return gcs::default_token_provider();
}

// The pages of an objects.list listing of `listed` (the prefix's URL), delimited by '/' or not.
// What it refers to must outlive the listing.
PageFetcher page_fetcher(HttpClient& client, const std::string& path_prefix,
                         const std::string& bucket, const std::string& listed, bool delimited) {
  return [&client, &path_prefix, &bucket, &listed, delimited](const std::string& name_prefix,
                                    const std::optional<std::string>& token)
             -> boost::asio::awaitable<ListingPage> {
    const std::string target =
        path_prefix + gcs::list_target(bucket, name_prefix, delimited, token);
    co_return gcs::parse_objects_page(co_await client.get_text(target, listed, max_list_page),
                                      listed);
  };
}

}  // namespace

struct GcsStore::Impl {
  std::string bucket;
  boost::asio::any_io_executor executor;  // Where destroyed writers cancel their uploads.
  std::string origin;                     // "scheme://host[:port]" of the endpoint.
  // The endpoint's path, if it has one (a proxy's, say), which every request target starts with.
  std::string path_prefix;
  std::string description;
  std::shared_ptr<HttpClient> client;  // Shared with writers, which cancel in the background.
  ObjectPins<ResponseVersion> pins;
};

GcsStore::GcsStore(boost::asio::any_io_executor executor, const Url& bucket, HttpOptions http,
                   GcsOptions options)
    : impl_(std::make_unique<Impl>()) {
  impl_->bucket = checked_bucket(bucket).host;
  impl_->executor = executor;
  const Endpoint endpoint = resolve_endpoint(options);
  const auto tokens = token_provider(options, endpoint.emulator);
  impl_->path_prefix = endpoint.path_prefix;
  impl_->origin = endpoint.origin.origin();
  impl_->description =
      impl_->origin + impl_->path_prefix + " (" +
      (tokens ? "credentials: " + tokens->name() : std::string("without credentials")) + ")";
  log(LogLevel::debug,
      [&] { return "gs://" + impl_->bucket + ": endpoint " + impl_->description; });
  impl_->client = std::make_shared<HttpClient>(std::move(executor), endpoint.origin,
                                               std::move(http),
                                               std::make_shared<gcs::Adapter>(tokens));
}

GcsStore::~GcsStore() = default;

const std::string& GcsStore::describe() const { return impl_->description; }

std::string GcsStore::url(const std::string& key) const { return "gs://" + impl_->bucket + key; }

boost::asio::awaitable<ObjectStat> GcsStore::stat(std::string key) {
  return pinned_stat(*this, impl_->pins, std::move(key));
}

boost::asio::awaitable<std::uint64_t> GcsStore::size(std::string key) {
  const std::string object = url(key);
  check_bucket_key(object, key, "GCS");
  const std::string body = co_await impl_->client->get_text(
      impl_->path_prefix + gcs::metadata_target(impl_->bucket, key.substr(1)), object,
      max_metadata);
  const gcs::ObjectMetadata metadata = gcs::parse_object_metadata(body, object);
  pin_version(impl_->pins, key, object,
              ResponseVersion{.generation = metadata.generation, .size = metadata.size});
  co_return metadata.size;
}

boost::asio::awaitable<std::vector<ObjectInfo>> GcsStore::list(std::string prefix,
                                                               ListDepth depth) {
  const std::string listed = url(prefix);
  co_return co_await list_bucket(listed, "GCS", prefix,
                                 page_fetcher(*impl_->client, impl_->path_prefix, impl_->bucket,
                                              listed, depth == ListDepth::one_level));
}

boost::asio::awaitable<Listing> GcsStore::list_level(std::string prefix) {
  const std::string listed = url(prefix);
  co_return co_await list_bucket_level(
      listed, "GCS", prefix,
      page_fetcher(*impl_->client, impl_->path_prefix, impl_->bucket, listed, true));
}

boost::asio::awaitable<void> GcsStore::read_range(std::string key, std::uint64_t offset,
                                                  std::span<std::byte> destination) {
  const std::string object = url(key);
  check_bucket_key(object, key, "GCS");
  if (destination.empty()) co_return;
  check_byte_range(object, offset, destination.size());
  ResponseVersion version = impl_->pins.find(key).value_or(ResponseVersion{});
  const std::string media =
      impl_->path_prefix + gcs::media_target(impl_->bucket, key.substr(1), version.generation);
  co_await impl_->client->read_range(media, object, offset, destination, version);
  pin_version(impl_->pins, key, object, version);
}

StoreStats GcsStore::stats() const { return impl_->client->stats(); }

std::unique_ptr<ObjectWriter> GcsStore::create_writer(std::string key, WriteOptions options) {
  const std::string object = url(key);
  check_bucket_key(object, key, "GCS");
  if (key.back() == '/') {
    throw InvalidArgument(object + ": an object to write needs a name, not a prefix");
  }
  gcs::UploadTarget target{impl_->path_prefix + gcs::upload_objects_target(impl_->bucket),
                           key.substr(1),
                           impl_->path_prefix + gcs::metadata_target(impl_->bucket, key.substr(1)),
                           impl_->origin};
  return std::make_unique<gcs::Writer>(impl_->client, impl_->executor, std::move(target), object,
                                       options);
}

std::unique_ptr<ObjectStore> open_gcs_store(const Url& url, boost::asio::any_io_executor executor,
                                            const StoreOptions& options) {
  return std::make_unique<GcsStore>(std::move(executor), url, options.http(), options.gcs());
}

void apply_gcs_settings(const CommonStoreSettings& settings, StoreOptions& options) {
  if (settings.anonymous) options.gcs().anonymous = true;
}

}  // namespace tensorstream
