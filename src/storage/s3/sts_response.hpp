#pragma once
// The JSON answers of STS AssumeRoleWithWebIdentity (asked for with Accept: application/json,
// which spares us an XML parser for this one small document).

#include <string>
#include <string_view>

#include "tensorstream/storage/s3/credentials.hpp"

namespace tensorstream::s3 {

/// Reads AssumeRoleWithWebIdentityResponse.AssumeRoleWithWebIdentityResult.Credentials:
/// AccessKeyId, SecretAccessKey, SessionToken and Expiration (seconds since the epoch, as STS
/// writes it in JSON, or ISO 8601). Throws CredentialsError(`provider`, cause naming `url`,
/// configured) when any is missing or malformed.
Credentials parse_web_identity_response(std::string_view json, const std::string& url,
                                        const std::string& provider);

/// "Code: Message" from an STS error document {"Error": {"Code", "Message"}}; empty when
/// `json` is not one.
std::string sts_error(std::string_view json);

}  // namespace tensorstream::s3
