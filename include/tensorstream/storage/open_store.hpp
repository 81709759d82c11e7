#pragma once
/// @file
/// Picking the backend for a URL.

#include <memory>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/store_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream {

/// Creates the store serving `url` (see register_scheme()): that of the scheme claiming it, else
/// of its own scheme (find_scheme_serving()), running its I/O on `executor`. Throws
/// InvalidArgument for a scheme nobody registered.
TENSORSTREAM_API
std::unique_ptr<ObjectStore> open_store(const Url& url, boost::asio::any_io_executor executor,
                                        const StoreOptions& options = {});

}  // namespace tensorstream
