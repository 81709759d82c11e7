#pragma once
/// @file
/// The interface of every source of Azure credentials, and the cache and chain in front of them.

#include "tensorstream/storage/azure/credentials.hpp"
#include "tensorstream/storage/credential_source.hpp"

namespace tensorstream {
extern template class CachedCredentials<azure::Credentials>;
extern template class CredentialChain<azure::Credentials>;
}  // namespace tensorstream

namespace tensorstream::azure {

/// A source of Azure credentials: a connection string, an account key, a SAS token, an Entra ID
/// token endpoint, a managed identity. get() reads the source's configuration anew on every
/// call, and may be called concurrently.
using CredentialsProvider = CredentialSource<Credentials>;

/// Keeps the token another provider got (one token request however many requests a stream has
/// in flight); see CachedCredentials for the rules, which are s3::CachedProvider's too.
using CachedProvider = CachedCredentials<Credentials>;

/// The credentials of the first provider that has some, in DefaultAzureCredential's manner (see
/// CredentialChain).
using ChainProvider = CredentialChain<Credentials>;

}  // namespace tensorstream::azure
