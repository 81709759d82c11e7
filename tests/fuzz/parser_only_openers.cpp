// The fuzz targets parse URLs, which needs the registry of schemes, but build no stores: their
// openers and the functions that receive their settings here refuse, and az:// claims no URL, so
// that the parsers link without the network and file code.
#include "storage/builtin_schemes.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

std::unique_ptr<ObjectStore> refuse(const Url& url) {
  throw InvalidArgument(url.str() + ": the fuzz build has no stores");
}

void refuse_settings() { throw InvalidArgument("the fuzz build has no stores to configure"); }

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

void apply_s3_settings(const CommonStoreSettings&, StoreOptions&) { refuse_settings(); }
void apply_gcs_settings(const CommonStoreSettings&, StoreOptions&) { refuse_settings(); }
void apply_hf_settings(const CommonStoreSettings&, StoreOptions&) { refuse_settings(); }
void apply_azure_settings(const CommonStoreSettings&, StoreOptions&) { refuse_settings(); }

bool is_azure_blob_url(const Url&, const StoreOptions&) { return false; }

}  // namespace tensorstream
