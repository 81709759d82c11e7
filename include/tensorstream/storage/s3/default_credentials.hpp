#pragma once
/// @file
/// The credential chain of the AWS SDKs.

#include <memory>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// The AWS SDKs' order: environment → shared files → web identity → container endpoint → EC2
/// instance metadata, cached until five minutes before the credentials expire.
TENSORSTREAM_API
std::shared_ptr<CredentialsProvider> default_credentials_provider();

}  // namespace tensorstream::s3
