#pragma once
// The certificate credential of an application registered with Entra ID: a JWT signed with the
// certificate's private key stands in for a client secret (RFC 7523).

#include <chrono>
#include <string>
#include <string_view>

namespace tensorstream::azure {

/// How long a client assertion is valid; MSAL signs them for ten minutes too.
inline constexpr std::chrono::seconds client_assertion_lifetime{600};

/// The client_assertion_type of a JWT client assertion.
inline constexpr std::string_view jwt_bearer_assertion =
    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// What a client assertion needs of a certificate and its key.
struct ClientCertificate {
  std::string thumbprint;   ///< x5t: base64url of the SHA-1 of the certificate's DER.
  std::string private_key;  ///< The RSA key as unencrypted PEM, in memory only; never logged.

  /// Reads the first certificate and the private key in `pem` (one file holds both, in either
  /// order, as Azure's tools write it), decrypting the key with `password` when it is
  /// encrypted. Throws InvalidArgument saying what is missing or wrong: no certificate, no key,
  /// an encrypted key without the right password, a key that is not RSA or not the
  /// certificate's.
  static ClientCertificate parse(std::string_view pem, const std::string& password);
};

/// The client assertion of `client_id` for the token endpoint `audience`, made at `now`: a JWT
/// with header {"alg":"RS256","typ":"JWT","x5t":THUMBPRINT} and claims aud, iss = sub =
/// `client_id`, a random jti, nbf = `now` and exp = `now` plus client_assertion_lifetime, signed
/// with the certificate's key.
std::string client_assertion(const ClientCertificate& certificate, const std::string& client_id,
                             const std::string& audience,
                             std::chrono::system_clock::time_point now);

}  // namespace tensorstream::azure
