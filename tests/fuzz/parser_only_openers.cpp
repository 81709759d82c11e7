// The fuzz targets parse URLs, which needs the registry of schemes, but build no stores: their
// openers here refuse, so that the parsers link without the network and file code.
#include "storage/builtin_schemes.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

std::unique_ptr<ObjectStore> refuse(const Url& url) {
  throw InvalidArgument(url.str() + ": the fuzz build has no stores");
}

}  // namespace

std::unique_ptr<ObjectStore> open_file_store(const Url& url, boost::asio::any_io_executor,
                                             const StoreOptions&) {
  return refuse(url);
}
std::unique_ptr<ObjectStore> open_http_store(const Url& url, boost::asio::any_io_executor,
                                             const StoreOptions&) {
  return refuse(url);
}
std::unique_ptr<ObjectStore> open_s3_store(const Url& url, boost::asio::any_io_executor,
                                           const StoreOptions&) {
  return refuse(url);
}
std::unique_ptr<ObjectStore> open_gcs_store(const Url& url, boost::asio::any_io_executor,
                                            const StoreOptions&) {
  return refuse(url);
}
std::unique_ptr<ObjectStore> open_hf_store(const Url& url, boost::asio::any_io_executor,
                                           const StoreOptions&) {
  return refuse(url);
}
std::unique_ptr<ObjectStore> open_azure_store(const Url& url, boost::asio::any_io_executor,
                                              const StoreOptions&) {
  return refuse(url);
}

}  // namespace tensorstream
