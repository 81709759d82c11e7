#pragma once
/// @file
/// Options of every backend, gathered for open_store().

#include "tensorstream/storage/file_store.hpp"
#include "tensorstream/storage/http_options.hpp"

namespace tensorstream {

/// Options of the object stores open_store() can create.
struct StoreOptions {
  HttpOptions http;        ///< http(s):// (and later s3://, gs://).
  FileStoreOptions file;   ///< file:// and plain paths.
};

}  // namespace tensorstream
