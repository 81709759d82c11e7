#pragma once
// The JSON credentials document of the EC2 instance metadata and ECS container endpoints.

#include <string>
#include <string_view>

#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// Parses {"AccessKeyId", "SecretAccessKey", "Token", "Expiration", optional "Code"}.
/// Throws AWS CredentialsError(`provider`, cause naming `url`, configured) when it is not valid
/// JSON, lacks the key pair, has an unparsable Expiration, or a Code other than "Success".
Credentials parse_credentials_document(std::string_view json, const std::string& url,
                                       const std::string& provider, bool configured);

}  // namespace tensorstream::s3
