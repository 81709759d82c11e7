#pragma once
// RSA keys for tests of service-account signatures, made in-process with OpenSSL.

#include <string>

namespace tensorstream::testing {

/// A fresh RSA key pair in PEM.
struct RsaKeyPair {
  std::string private_key;  ///< PKCS #8 ("BEGIN PRIVATE KEY"), as in service account key files.
  std::string public_key;   ///< SubjectPublicKeyInfo ("BEGIN PUBLIC KEY").

  /// Generates a key of `bits` bits. Throws std::runtime_error when OpenSSL fails.
  static RsaKeyPair generate(unsigned bits = 2048);
};

}  // namespace tensorstream::testing
