#pragma once
// The XML answers of STS AssumeRoleWithWebIdentity.

#include <string>
#include <string_view>

#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// Reads AssumeRoleWithWebIdentityResponse/AssumeRoleWithWebIdentityResult/Credentials:
/// AccessKeyId, SecretAccessKey, SessionToken and Expiration (ISO 8601 UTC). Throws
/// CredentialsError(`provider`, cause naming `url`, configured) when any is missing or malformed.
Credentials parse_web_identity_response(std::string_view xml, const std::string& url,
                                        const std::string& provider);

/// "Code: Message" from an STS error document (ErrorResponse/Error); empty when `xml` is not
/// one.
std::string sts_error(std::string_view xml);

}  // namespace tensorstream::s3
