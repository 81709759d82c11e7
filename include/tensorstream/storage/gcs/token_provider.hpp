#pragma once
/// @file
/// The interface of every source of Google access tokens.

#include "tensorstream/storage/credential_source.hpp"
#include "tensorstream/storage/gcs/access_token.hpp"

namespace tensorstream::gcs {

/// A source of access tokens: a service account key, gcloud's user credentials, the GCE metadata
/// server. get() reads the source's configuration anew on every call, and may be called
/// concurrently.
using TokenProvider = CredentialSource<AccessToken>;

}  // namespace tensorstream::gcs
