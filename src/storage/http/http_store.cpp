#include "tensorstream/storage/http_store.hpp"

#include <utility>

#include "storage/builtin_schemes.hpp"
#include "storage/http/http_client.hpp"
#include "storage/response_version.hpp"
#include "storage/request_checks.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

// Keys go on the request line as they are, so they must be origin-form targets.
void check_key(const std::string& url, const std::string& key) {
  if (key.empty() || key.front() != '/') {
    throw InvalidArgument(url + ": HTTP keys are URL paths starting with '/'");
  }
  for (const char c : key) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      throw InvalidArgument(url +
                            ": spaces and control characters in keys must be percent-encoded");
    }
  }
}

const Url& checked_origin(const Url& origin) {
  if (origin.scheme != "http" && origin.scheme != "https") {
    throw InvalidArgument(origin.str() + ": HttpStore serves http:// and https:// URLs only");
  }
  return origin;
}

}  // namespace

struct HttpStore::Impl {
  std::string origin;
  // The opened URL's query, which goes with every request: a signature (a SAS token, a signed
  // CDN policy) that grants this path and what lies under it.
  std::string query;
  HttpClient client;
  ObjectPins<ResponseVersion> pins;

  // What goes on the request line for `key`: the key, with the store's query unless it has one.
  std::string target(const std::string& key) const {
    if (query.empty() || key.find('?') != std::string::npos) return key;
    return key + '?' + query;
  }
};

HttpStore::HttpStore(boost::asio::any_io_executor executor, Url origin, HttpOptions options)
    : impl_(new Impl{checked_origin(origin).origin(), origin.query,
                     HttpClient(std::move(executor), origin, std::move(options)),
                     {}}) {}

HttpStore::~HttpStore() = default;

std::string HttpStore::url(const std::string& key) const {
  return redact_query(impl_->origin + impl_->target(key));
}

boost::asio::awaitable<ObjectStat> HttpStore::stat(std::string key) {
  ObjectStat found = co_await pinned_stat(*this, impl_->pins, key);
  // A plain server's ETag may be made of the modification time (nginx's is), so only a version
  // seen well after the object's last change, or not weak, tells its bytes apart.
  if (const auto pinned = impl_->pins.find(key)) {
    const bool settled = !pinned->recent && !pinned->etag.starts_with("W/");
    found.version = object_version(*pinned, object_identity(key), settled);
  }
  co_return found;
}

boost::asio::awaitable<std::uint64_t> HttpStore::size(std::string key) {
  const std::string object = url(key);
  check_key(object, key);
  ResponseVersion version;
  const std::uint64_t size =
      co_await impl_->client.content_length(impl_->target(key), object, version);
  pin_version(impl_->pins, key, object, version);
  co_return size;
}

boost::asio::awaitable<std::vector<ObjectInfo>> HttpStore::list(std::string prefix, ListDepth) {
  throw InvalidArgument(url(prefix) +
                        ": HTTP servers cannot list objects; name a file or an index");
  co_return std::vector<ObjectInfo>{};
}

boost::asio::awaitable<void> HttpStore::read_range(std::string key, std::uint64_t offset,
                                                   std::span<std::byte> destination) {
  const std::string object = url(key);
  check_key(object, key);
  if (destination.empty()) co_return;
  check_byte_range(object, offset, destination.size());
  ResponseVersion version = impl_->pins.find(key).value_or(ResponseVersion{});
  co_await impl_->client.read_range(impl_->target(key), object, offset, destination, version);
  pin_version(impl_->pins, key, object, version);
}

StoreStats HttpStore::stats() const { return impl_->client.stats(); }

std::unique_ptr<ObjectStore> open_http_store(const Url& url, boost::asio::any_io_executor executor,
                                             const StoreOptions& options) {
  return std::make_unique<HttpStore>(std::move(executor), url, options.http());
}

}  // namespace tensorstream
