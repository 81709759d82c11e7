#pragma once
// Checking the JSON Web Tokens clients sign, as the test token endpoints do.

#include <optional>
#include <string>
#include <string_view>

namespace tensorstream::testing {

/// `text` decoded from base64url without padding; nullopt when it holds another character.
std::optional<std::string> base64url_decode(std::string_view text);

/// Whether `signature` is the RS256 signature of `message` by the key of `public_key` (PEM
/// SubjectPublicKeyInfo).
bool verify_rs256(const std::string& public_key, std::string_view message,
                  std::string_view signature);

/// A JWT taken apart: "HEADER.CLAIMS.SIGNATURE" with each part decoded.
struct JwtParts {
  std::string header;         ///< JSON.
  std::string claims;         ///< JSON.
  std::string signature;      ///< Bytes.
  std::string signing_input;  ///< "HEADER.CLAIMS" as sent, what the signature signs.

  /// Splits and decodes `jwt`; nullopt when it is not three base64url parts.
  static std::optional<JwtParts> parse(std::string_view jwt);
};

}  // namespace tensorstream::testing
