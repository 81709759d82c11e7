#pragma once
// Tokens that orchestrators (EKS, ECS, OIDC issuers) hand to pods and tasks in files.

#include <string>

namespace tensorstream::s3 {

/// The contents of `path`, without trailing line breaks; Kubernetes rotates such files, so they
/// are read anew on every get() call. Throws AWS CredentialsError(`provider`, "VARIABLE PATH: reason",
/// configured) when the file cannot be read; `variable` names where the path came from.
std::string read_token_file(const std::string& path, const std::string& variable,
                            const std::string& provider);

}  // namespace tensorstream::s3
