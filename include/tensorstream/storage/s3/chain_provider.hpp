#pragma once
/// @file
/// Trying AWS credential providers in order.

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream {
extern template class CredentialChain<s3::Credentials>;
}  // namespace tensorstream

namespace tensorstream::s3 {

/// The "credential chain": the credentials of the first provider that has some, as in the AWS
/// SDKs (see CredentialChain).
using ChainProvider = CredentialChain<Credentials>;

}  // namespace tensorstream::s3
