#pragma once
/// @file
/// Options of every backend, gathered for open_store().

#include "tensorstream/storage/file_options.hpp"
#include "tensorstream/storage/gcs_options.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/options_bag.hpp"
#include "tensorstream/storage/s3_options.hpp"

namespace tensorstream {

/// Options of the object stores open_store() can create.
struct StoreOptions {
  HttpOptions http;        ///< The HTTP client of http(s)://, s3:// and gs://.
  S3Options s3;            ///< s3://: region, endpoint, addressing, credentials.
  GcsOptions gcs;          ///< gs://: endpoint, credentials.
  FileOptions file;        ///< file:// and plain paths.
  /// Options of the schemes a program registers (register_scheme()), one value per type: a new
  /// backend brings its own options type instead of a member here.
  OptionsBag extra;
};

}  // namespace tensorstream
