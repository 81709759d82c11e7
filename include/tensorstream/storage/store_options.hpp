#pragma once
/// @file
/// Options of every backend, gathered for open_store().

#include "tensorstream/storage/azure_options.hpp"
#include "tensorstream/storage/file_options.hpp"
#include "tensorstream/storage/gcs_options.hpp"
#include "tensorstream/storage/hf_options.hpp"
#include "tensorstream/storage/http_options.hpp"
#include "tensorstream/storage/options_bag.hpp"
#include "tensorstream/storage/s3_options.hpp"

namespace tensorstream {

/// Options of the object stores open_store() can create: one value per backend's options type,
/// so that a backend added to the library, or registered by a program (register_scheme()),
/// brings its own type and changes neither this class's members nor its layout:
///
///     StoreOptions options;
///     options.s3().region = "eu-west-1";
///     options.http().max_retries = 3;
///     options.get<VaultOptions>().token = "...";  // a registered scheme's
///
/// Options never set are the type's defaults.
class StoreOptions : public OptionsBag {
 public:
  /// The HTTP client of http(s)://, s3://, gs://, az:// and hf://.
  HttpOptions& http() { return get<HttpOptions>(); }
  const HttpOptions& http() const { return get<HttpOptions>(); }

  /// s3://: region, endpoint, addressing, credentials.
  S3Options& s3() { return get<S3Options>(); }
  const S3Options& s3() const { return get<S3Options>(); }

  /// gs://: endpoint, credentials.
  GcsOptions& gcs() { return get<GcsOptions>(); }
  const GcsOptions& gcs() const { return get<GcsOptions>(); }

  /// az://: account, endpoint, credentials.
  AzureOptions& azure() { return get<AzureOptions>(); }
  const AzureOptions& azure() const { return get<AzureOptions>(); }

  /// hf://: the Hub's endpoint, token and local cache.
  HfOptions& hf() { return get<HfOptions>(); }
  const HfOptions& hf() const { return get<HfOptions>(); }

  /// file:// and plain paths.
  FileOptions& file() { return get<FileOptions>(); }
  const FileOptions& file() const { return get<FileOptions>(); }
};

}  // namespace tensorstream
