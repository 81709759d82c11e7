#pragma once
// Reading environment variables the way the AWS SDKs do.

#include <string>

namespace tensorstream::s3 {

/// The value of environment variable `name`; empty when unset, since the SDKs treat an empty
/// variable as an unset one.
std::string environment(const char* name);

}  // namespace tensorstream::s3
