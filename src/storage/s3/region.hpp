#pragma once
/// @file
/// Which AWS region requests go to, resolved as the AWS SDKs do.

#include <string>

namespace tensorstream::s3 {

/// AWS_REGION, else AWS_DEFAULT_REGION, else the `region` of the profile named by AWS_PROFILE
/// (else "default") in the shared config and credentials files, else "us-east-1". Throws
/// InvalidArgument naming the file when a shared file is malformed.
std::string resolve_region();

}  // namespace tensorstream::s3
