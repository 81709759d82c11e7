#pragma once
// The openers of the schemes the library registers from the start (scheme_registry.cpp says how
// their URLs are written and which common settings each takes), each defined next to its store
// with the function that receives its settings. The fuzz build, which parses URLs but has no
// stores, links its own (tests/fuzz/parser_only_openers.cpp).

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/scheme.hpp"
#include "tensorstream/storage/store_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

// storage/file/file_store.cpp
std::unique_ptr<ObjectStore> open_file_store(const Url& url, boost::asio::any_io_executor executor,
                                             const StoreOptions& options);
// storage/http/http_store.cpp: http:// and https://
std::unique_ptr<ObjectStore> open_http_store(const Url& url, boost::asio::any_io_executor executor,
                                             const StoreOptions& options);

// storage/s3/s3_store.cpp
std::unique_ptr<ObjectStore> open_s3_store(const Url& url, boost::asio::any_io_executor executor,
                                           const StoreOptions& options);
// Unsigned requests, the endpoint, the region, and a profile's keys, region and files (the
// profile becomes AWS_PROFILE, as the AWS CLI's --profile does).
void apply_s3_settings(const CommonStoreSettings& settings, StoreOptions& options);

// storage/gcs/gcs_store.cpp
std::unique_ptr<ObjectStore> open_gcs_store(const Url& url, boost::asio::any_io_executor executor,
                                            const StoreOptions& options);
// Anonymous requests.
void apply_gcs_settings(const CommonStoreSettings& settings, StoreOptions& options);

// storage/hf/hf_store.cpp
std::unique_ptr<ObjectStore> open_hf_store(const Url& url, boost::asio::any_io_executor executor,
                                           const StoreOptions& options);
// Anonymous requests: no token.
void apply_hf_settings(const CommonStoreSettings& settings, StoreOptions& options);

// storage/azure/azure_store.cpp: az://, and the http(s):// URLs is_azure_blob_url() claims
std::unique_ptr<ObjectStore> open_azure_store(const Url& url, boost::asio::any_io_executor executor,
                                              const StoreOptions& options);
// Anonymous requests, the blob endpoint and the storage account.
void apply_azure_settings(const CommonStoreSettings& settings, StoreOptions& options);

// storage/azure/azure_store.cpp: az://'s claim on http(s) URLs, which name blobs of Azure Storage
// that open_azure_store() serves with listings, credentials and writes: a host of Azure's blob
// endpoints (ACCOUNT.blob.core.windows.net and the sovereign clouds'), or a URL under the blob
// endpoint the options or AZURE_STORAGE_CONNECTION_STRING name (an emulator's).
bool is_azure_blob_url(const Url& url, const StoreOptions& options);

}  // namespace tensorstream
