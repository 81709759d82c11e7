#pragma once
/// @file
/// Reuse of an access token until shortly before it expires, with one refresh shared by all
/// callers.

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream {
extern template class CachedCredentials<gcs::AccessToken>;
}  // namespace tensorstream

namespace tensorstream::gcs {

/// Keeps the token another provider got (one token request however many requests a stream has
/// in flight); see CachedCredentials for the rules, which are s3::CachedProvider's too.
using CachedProvider = CachedCredentials<AccessToken>;

}  // namespace tensorstream::gcs
