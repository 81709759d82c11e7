#pragma once
// Self-signed RSA certificates for tests of certificate credentials (Entra ID client
// certificates), made in-process with OpenSSL.

#include <string>

#include "support/rsa_key.hpp"

namespace tensorstream::testing {

/// A self-signed certificate of an RSA key, valid for two days, in PEM.
struct RsaCertificate {
  std::string certificate;  ///< "BEGIN CERTIFICATE".
  std::string private_key;  ///< The key, PKCS #8 ("BEGIN PRIVATE KEY").
  std::string public_key;   ///< SubjectPublicKeyInfo ("BEGIN PUBLIC KEY").

  /// A certificate with subject and issuer CN=`common_name` for `key`. Throws
  /// std::runtime_error when OpenSSL fails.
  static RsaCertificate generate(const RsaKeyPair& key, const std::string& common_name);

  /// The certificate of `certificate_pem` with its public key, without the private key.
  static RsaCertificate of(const std::string& certificate_pem);

  /// The key encrypted with `password` (AES-256-CBC, "BEGIN ENCRYPTED PRIVATE KEY").
  std::string encrypted_private_key(const std::string& password) const;

  /// base64url of the SHA-1 of the certificate's DER: the "x5t" of JWTs its key signs.
  std::string thumbprint() const;
};

}  // namespace tensorstream::testing
