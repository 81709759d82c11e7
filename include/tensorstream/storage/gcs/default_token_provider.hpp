#pragma once
/// @file
/// Google's application default credentials, and tokens for a key file of the caller's.

#include <filesystem>
#include <memory>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// The Google SDKs' order: GOOGLE_APPLICATION_CREDENTIALS → gcloud's application default
/// credentials file → the metadata server, cached until five minutes before the token expires.
TENSORSTREAM_API
std::shared_ptr<TokenProvider> default_token_provider();

/// Tokens for the credentials file at `path` (a service account key, or gcloud's
/// `authorized_user` file), read anew on each refresh: the token is cached until five minutes
/// before it expires. Its errors name the file.
TENSORSTREAM_API
std::shared_ptr<TokenProvider> credentials_file_token_provider(std::filesystem::path path);

}  // namespace tensorstream::gcs
