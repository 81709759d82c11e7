#pragma once
/// @file
/// Trying token providers in order.

#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream {
extern template class CredentialChain<gcs::AccessToken>;
}  // namespace tensorstream

namespace tensorstream::gcs {

/// The "application default credentials": the token of the first provider that has one, as in
/// the Google SDKs (see CredentialChain).
using ChainProvider = CredentialChain<AccessToken>;

}  // namespace tensorstream::gcs
