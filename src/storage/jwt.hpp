#pragma once
// The pieces of a JSON Web Token signed with RS256 (RFC 7515, RFC 7519) that every cloud's
// client assertion shares: Google service accounts, Entra ID client certificates.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace tensorstream {

/// `bytes` in base64url without padding (RFC 7515, appendix C).
std::string base64url(std::string_view bytes);

/// The RS256 signature of `message` with the PEM private key `pem` (PKCS #1 v1.5, SHA-256).
/// Throws InvalidArgument when the key cannot be read (it may be encrypted) or is not RSA.
std::string sign_rs256(std::string_view pem, std::string_view message);

/// `time` as a JWT NumericDate: whole seconds since the epoch.
std::int64_t numeric_date(std::chrono::system_clock::time_point time);

/// "HEADER.CLAIMS.SIGNATURE": the base64url of the JSON `header` and `claims`, signed with
/// sign_rs256 and `pem`, which throws as sign_rs256 does.
std::string signed_jwt(std::string_view header, std::string_view claims, std::string_view pem);

}  // namespace tensorstream
