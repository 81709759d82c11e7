#include "tensorstream/storage/open_store.hpp"

#include "tensorstream/error.hpp"
#include "tensorstream/storage/file_store.hpp"
#include "tensorstream/storage/gcs_store.hpp"
#include "tensorstream/storage/http_store.hpp"
#include "tensorstream/storage/s3_store.hpp"

namespace tensorstream {

std::unique_ptr<ObjectStore> open_store(const Url& url, boost::asio::any_io_executor executor,
                                        const StoreOptions& options) {
  if (url.scheme == "file") return std::make_unique<FileStore>(std::move(executor), options.file);
  if (url.scheme == "http" || url.scheme == "https") {
    return std::make_unique<HttpStore>(std::move(executor), url, options.http);
  }
  if (url.scheme == "s3") {
    return std::make_unique<S3Store>(std::move(executor), url, options.http, options.s3);
  }
  if (url.scheme == "gs") {
    return std::make_unique<GcsStore>(std::move(executor), url, options.http, options.gcs);
  }
  throw InvalidArgument(url.str() + ": " + url.scheme +
                        ":// is not supported (use file://, http://, https://, s3:// or gs://)");
}

}  // namespace tensorstream
