#pragma once
// The openers of the schemes the library registers from the start (scheme_registry.cpp says how
// their URLs are written), each defined next to its store. The fuzz build, which parses URLs
// but has no stores, links openers of its own (tests/fuzz/parser_only_openers.cpp).

#include <boost/asio/any_io_executor.hpp>
#include <memory>

#include "tensorstream/storage/object_store.hpp"
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
// storage/gcs/gcs_store.cpp
std::unique_ptr<ObjectStore> open_gcs_store(const Url& url, boost::asio::any_io_executor executor,
                                            const StoreOptions& options);
// storage/hf/hf_store.cpp
std::unique_ptr<ObjectStore> open_hf_store(const Url& url, boost::asio::any_io_executor executor,
                                           const StoreOptions& options);

// storage/azure/azure_store.cpp: az://, and http(s):// URLs of blob endpoints
std::unique_ptr<ObjectStore> open_azure_store(const Url& url, boost::asio::any_io_executor executor,
                                              const StoreOptions& options);

// storage/azure/azure_store.cpp: whether an http(s) URL names a blob of Azure Storage, which
// open_http_store() leaves to open_azure_store(): a host of Azure's blob endpoints
// (ACCOUNT.blob.core.windows.net and the sovereign clouds'), or a URL under the blob endpoint the
// options or AZURE_STORAGE_CONNECTION_STRING name (an emulator's).
bool is_azure_blob_url(const Url& url, const StoreOptions& options);

}  // namespace tensorstream
