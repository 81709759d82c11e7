#pragma once
// Files that hold a credential: a client certificate, a federated token.

#include <string>

namespace tensorstream::azure {

/// The whole content of the file at `path`, read anew on every call (Kubernetes rotates
/// projected tokens in place). Throws InvalidArgument "PATH: REASON", e.g. "PATH: No such file
/// or directory".
std::string read_credential_file(const std::string& path);

}  // namespace tensorstream::azure
