#include "tensorstream/storage/object_store.hpp"

#include "tensorstream/error.hpp"

namespace tensorstream {

std::unique_ptr<ObjectWriter> ObjectStore::create_writer(std::string key, WriteOptions) {
  throw InvalidArgument(url(key) + ": this store is read-only; objects can be written to "
                                   "file://, s3://, gs:// and az:// only");
}

boost::asio::awaitable<ObjectStat> ObjectStore::stat(std::string key) {
  const std::uint64_t bytes = co_await size(std::move(key));
  co_return ObjectStat{.size = bytes, .version = ObjectVersion()};
}

std::size_t ObjectStore::memory_alignment(const std::string&) { return 0; }

boost::asio::awaitable<Listing> ObjectStore::list_level(std::string prefix) {
  Listing listing;
  for (auto& object : co_await list(prefix, ListDepth::recursive)) {
    const std::size_t slash = object.key.find('/', prefix.size());
    if (slash == std::string::npos) {
      listing.objects.push_back(std::move(object));
    } else if (std::string sub = object.key.substr(0, slash + 1);
               listing.prefixes.empty() || listing.prefixes.back() != sub) {
      // Sorted keys keep each prefix's keys together.
      listing.prefixes.push_back(std::move(sub));
    }
  }
  co_return listing;
}

boost::asio::awaitable<StaleUploads> ObjectStore::abort_stale_uploads(
    std::string, std::chrono::system_clock::duration) {
  co_return StaleUploads{};
}

}  // namespace tensorstream
