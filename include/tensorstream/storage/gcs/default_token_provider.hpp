#pragma once
/// @file
/// Google's application default credentials.

#include <memory>

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs {

/// The Google SDKs' order: GOOGLE_APPLICATION_CREDENTIALS → gcloud's application default
/// credentials file → the metadata server, cached until five minutes before the token expires.
std::shared_ptr<TokenProvider> default_token_provider();

}  // namespace tensorstream::gcs
