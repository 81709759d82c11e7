#pragma once
// Reading environment variables the way the AWS and Google SDKs do.

#include <string>

namespace tensorstream {

/// The value of environment variable `name`; empty when unset, since the cloud SDKs treat an
/// empty variable as an unset one.
std::string environment(const char* name);

}  // namespace tensorstream
