#pragma once
/// @file
/// Options of the gs:// backend: endpoint and credentials.

#include <memory>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream {

/// Options of GcsStore. Empty fields are resolved as the Google SDKs resolve them.
struct TENSORSTREAM_API GcsOptions {
  /// JSON API endpoint such as "http://127.0.0.1:4443"; empty: STORAGE_EMULATOR_HOST
  /// ("host:port" or a URL; plain http, and requests go without credentials unless
  /// `token_provider` is set), else https://storage.googleapis.com.
  std::string endpoint{};
  /// Send requests without credentials, for public buckets (the CLI's --no-sign-request).
  bool anonymous = false;
  /// Source of access tokens; null: application default credentials
  /// (GOOGLE_APPLICATION_CREDENTIALS, gcloud's credentials file, the metadata server).
  std::shared_ptr<gcs::TokenProvider> token_provider{};
};

}  // namespace tensorstream
