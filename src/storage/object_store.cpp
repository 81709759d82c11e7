#include "tensorstream/storage/object_store.hpp"

#include "tensorstream/error.hpp"

namespace tensorstream {

std::unique_ptr<ObjectWriter> ObjectStore::create_writer(std::string key, WriteOptions) {
  throw InvalidArgument(url(key) + ": this store is read-only; objects can be written to "
                                   "file://, s3:// and gs:// only");
}

boost::asio::awaitable<StaleUploads> ObjectStore::abort_stale_uploads(
    std::string, std::chrono::system_clock::duration) {
  co_return StaleUploads{};
}

}  // namespace tensorstream
