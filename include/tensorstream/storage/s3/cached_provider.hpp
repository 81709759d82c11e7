#pragma once
/// @file
/// Reuse of AWS credentials until shortly before they expire, with one refresh shared by all
/// callers.

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream {
extern template class CachedCredentials<s3::Credentials>;
}  // namespace tensorstream

namespace tensorstream::s3 {

/// Keeps the credentials another provider loaded (one STS or instance metadata request however
/// many requests a stream has in flight); see CachedCredentials for the rules, which are
/// gcs::CachedProvider's too.
using CachedProvider = CachedCredentials<Credentials>;

}  // namespace tensorstream::s3
