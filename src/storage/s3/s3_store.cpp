#include "tensorstream/storage/s3_store.hpp"

#include <exception>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "storage/builtin_schemes.hpp"
#include "storage/bucket_listing.hpp"
#include "storage/environment.hpp"
#include "storage/http/http_client.hpp"
#include "storage/response_version.hpp"
#include "storage/request_checks.hpp"
#include "storage/s3/adapter.hpp"
#include "storage/s3/bucket_endpoint.hpp"
#include "storage/s3/list_buckets.hpp"
#include "storage/s3/list_objects.hpp"
#include "storage/s3/multipart_documents.hpp"
#include "storage/s3/profile_provider.hpp"
#include "storage/s3/writer.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/s3/cached_provider.hpp"
#include "tensorstream/storage/s3/default_credentials.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream {
namespace {

// A ListObjectsV2 or ListMultipartUploads page holds at most 1000 keys of at most 1 KiB each,
// plus markup.
constexpr std::size_t max_list_page = 4 << 20;

const Url& checked_bucket(const Url& bucket) {
  if (bucket.scheme != "s3") {
    throw InvalidArgument(bucket.str() + ": S3Store serves s3:// URLs only");
  }
  return bucket;
}

HttpOptions with_ca_bundle(HttpOptions http) {
  if (http.ca_file.empty()) http.ca_file = environment("AWS_CA_BUNDLE");
  return http;
}

std::shared_ptr<s3::CredentialsProvider> signing_credentials(const S3Options& options) {
  if (!options.sign_requests) return nullptr;
  return options.credentials ? options.credentials : s3::default_credentials_provider();
}

// The pages of a ListObjectsV2 listing of `listed` (the prefix's URL), delimited by '/' or not.
// What it refers to must outlive the listing.
PageFetcher page_fetcher(HttpClient& client, const std::string& path_prefix,
                         const std::string& listed, bool delimited) {
  return [&client, &path_prefix, &listed, delimited](const std::string& name_prefix,
                                    const std::optional<std::string>& token)
             -> boost::asio::awaitable<ListingPage> {
    const std::string request =
        path_prefix + "/?" + s3::list_objects_query(name_prefix, delimited, token);
    co_return s3::parse_list_objects(co_await client.get_text(request, listed, max_list_page),
                                     listed);
  };
}

}  // namespace

struct S3Store::Impl {
  std::string bucket;
  std::string path_prefix;
  std::string description;
  boost::asio::any_io_executor executor;
  std::shared_ptr<HttpClient> client;  // Shared with writers aborting in the background.
  ObjectPins<ResponseVersion> pins;

  // The request target of `key`: the bucket's path prefix and the URI-encoded key.
  std::string target(const std::string& key) const {
    return path_prefix + s3::uri_encode(key, true);
  }
};

S3Store::S3Store(boost::asio::any_io_executor executor, const Url& bucket, HttpOptions http,
                 S3Options options)
    : impl_(std::make_unique<Impl>()) {
  impl_->bucket = checked_bucket(bucket).host;
  impl_->executor = executor;
  const s3::BucketEndpoint endpoint = s3::resolve_bucket_endpoint(impl_->bucket, options);
  impl_->path_prefix = endpoint.path_prefix;
  impl_->description = endpoint.describe();
  log(LogLevel::debug, [&] {
    return "s3://" + impl_->bucket + ": endpoint " + impl_->description +
           (options.sign_requests ? "" : ", unsigned requests");
  });
  impl_->client = std::make_shared<HttpClient>(
      std::move(executor), endpoint.origin, with_ca_bundle(std::move(http)),
      std::make_shared<s3::Adapter>(endpoint.region, signing_credentials(options)));
}

S3Store::~S3Store() = default;

const std::string& S3Store::describe() const { return impl_->description; }

std::string S3Store::url(const std::string& key) const { return "s3://" + impl_->bucket + key; }

boost::asio::awaitable<ObjectStat> S3Store::stat(std::string key) {
  return pinned_stat(*this, impl_->pins, std::move(key));
}

boost::asio::awaitable<std::uint64_t> S3Store::size(std::string key) {
  const std::string object = url(key);
  check_bucket_key(object, key, "S3");
  std::exception_ptr refused;
  try {
    ResponseVersion version;
    const std::uint64_t size =
        co_await impl_->client->content_length(impl_->target(key), object, version);
    pin_version(impl_->pins, key, object, version);
    co_return size;
  } catch (const StorageError& error) {
    if (error.transient() || !error.cause().starts_with("HTTP 4")) throw;
    refused = std::current_exception();
  }
  // A refused HEAD says no more than "HTTP 404" or "HTTP 403": S3 sends its error document only
  // with a body. The same request as a GET of one byte is refused with S3's code, message and
  // request id (NoSuchKey or NoSuchBucket, AccessDenied, SignatureDoesNotMatch, ...), which is
  // what the caller needs to act on. Should it succeed after all, the HEAD's refusal stands.
  std::byte first_byte[1];
  ResponseVersion any_version;
  co_await impl_->client->read_range(impl_->target(key), object, 0,
                                     std::span<std::byte>(first_byte), any_version);
  std::rethrow_exception(refused);
}

boost::asio::awaitable<std::vector<ObjectInfo>> S3Store::list(std::string prefix,
                                                              ListDepth depth) {
  const std::string listed = url(prefix);
  co_return co_await list_bucket(
      listed, "S3", prefix,
      page_fetcher(*impl_->client, impl_->path_prefix, listed, depth == ListDepth::one_level));
}

boost::asio::awaitable<Listing> S3Store::list_level(std::string prefix) {
  const std::string listed = url(prefix);
  co_return co_await list_bucket_level(
      listed, "S3", prefix, page_fetcher(*impl_->client, impl_->path_prefix, listed, true));
}

boost::asio::awaitable<void> S3Store::read_range(std::string key, std::uint64_t offset,
                                                 std::span<std::byte> destination) {
  const std::string object = url(key);
  check_bucket_key(object, key, "S3");
  if (destination.empty()) co_return;
  check_byte_range(object, offset, destination.size());
  ResponseVersion version = impl_->pins.find(key).value_or(ResponseVersion{});
  co_await impl_->client->read_range(impl_->target(key), object, offset, destination, version);
  pin_version(impl_->pins, key, object, version);
}

std::unique_ptr<ObjectWriter> S3Store::create_writer(std::string key, WriteOptions options) {
  const std::string object = url(key);
  check_bucket_key(object, key, "S3");
  if (key.back() == '/') {
    throw InvalidArgument(object + ": an object to write needs a name, not a prefix");
  }
  return std::make_unique<s3::Writer>(impl_->client, impl_->executor, impl_->target(key), object,
                                      options);
}

boost::asio::awaitable<StaleUploads> S3Store::abort_stale_uploads(
    std::string prefix, std::chrono::system_clock::duration older_than) {
  const std::string listed = url(prefix);
  if (prefix.empty() || prefix.front() != '/' || prefix.back() != '/') {
    throw InvalidArgument(listed + ": removing stale S3 uploads needs a prefix starting and "
                                   "ending with '/'");
  }
  const std::string name_prefix = prefix.substr(1);
  const auto now = std::chrono::system_clock::now();
  StaleUploads stale;
  std::optional<s3::UploadsMarker> marker;
  do {
    const std::string request =
        impl_->path_prefix + "/?" + s3::list_multipart_uploads_query(name_prefix, marker);
    const std::string body = co_await impl_->client->get_text(request, listed, max_list_page);
    s3::MultipartUploadsPage page = s3::parse_list_multipart_uploads(body, listed);
    for (s3::MultipartUpload& upload : page.uploads) {
      if (older_than > std::chrono::system_clock::duration::zero() &&
          now - upload.initiated < older_than) {
        ++stale.kept;
        continue;
      }
      std::string key = "/" + upload.key;
      const std::string object_target = impl_->target(key);
      const std::string object = url(key);
      if (co_await s3::abort_multipart_upload(*impl_->client, object_target, object, upload.id)) {
        stale.removed.push_back(StaleUpload{std::move(key), upload.id, upload.initiated});
      }
    }
    // A marker that does not move on would list the same page forever.
    if (page.next && page.next == marker) {
      throw FormatError(listed + ": malformed ListMultipartUploads response: the next page "
                                 "would start where this one did");
    }
    marker = std::move(page.next);
  } while (marker);
  std::sort(stale.removed.begin(), stale.removed.end(),
            [](const StaleUpload& a, const StaleUpload& b) {
              return std::tie(a.key, a.upload) < std::tie(b.key, b.upload);
            });
  co_return stale;
}

StoreStats S3Store::stats() const { return impl_->client->stats(); }

std::unique_ptr<ObjectStore> open_s3_store(const Url& url, boost::asio::any_io_executor executor,
                                           const StoreOptions& options) {
  return std::make_unique<S3Store>(std::move(executor), url, options.http(), options.s3());
}

void apply_s3_settings(const CommonStoreSettings& settings, StoreOptions& options) {
  S3Options& s3_options = options.s3();
  if (settings.anonymous) s3_options.sign_requests = false;
  if (!settings.profile.empty()) {
    // What the AWS CLI's --profile does: the profile's region and files, as AWS_PROFILE names
    // them (set before any thread of the program starts), and its keys before the environment's.
    ::setenv("AWS_PROFILE", settings.profile.c_str(), 1);
    s3_options.credentials =
        std::make_shared<s3::CachedProvider>(std::make_shared<s3::ProfileProvider>());
  }
  if (!settings.region.empty()) s3_options.region = settings.region;
  if (!settings.endpoint.empty()) s3_options.endpoint = settings.endpoint;
}

boost::asio::awaitable<std::vector<std::string>> list_s3_buckets(
    boost::asio::any_io_executor executor, HttpOptions http, S3Options options) {
  const s3::BucketEndpoint endpoint = s3::resolve_service_endpoint(options);
  HttpClient client(std::move(executor), endpoint.origin, with_ca_bundle(std::move(http)),
                    std::make_shared<s3::Adapter>(endpoint.region, signing_credentials(options)));
  const std::string listed = "s3://";
  std::vector<std::string> names;
  std::optional<std::string> token;
  do {
    const std::string body =
        co_await client.get_text(s3::list_buckets_target(token), listed, max_list_page);
    s3::BucketsPage page = s3::parse_list_buckets(body, listed);
    names.insert(names.end(), page.names.begin(), page.names.end());
    token = std::move(page.next_token);
  } while (token);
  std::sort(names.begin(), names.end());
  co_return names;
}

}  // namespace tensorstream
