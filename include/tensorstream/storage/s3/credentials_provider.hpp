#pragma once
/// @file
/// The interface of every source of AWS credentials.

#include "tensorstream/storage/credential_source.hpp"
#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// A source of AWS credentials: the environment, the shared files, an HTTP endpoint. get()
/// reads the source's configuration anew on every call, and may be called concurrently.
using CredentialsProvider = CredentialSource<Credentials>;

}  // namespace tensorstream::s3
