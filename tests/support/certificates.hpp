#pragma once
// A throwaway PKI for HTTPS tests, made with the openssl command-line tool.

#include <filesystem>

namespace tensorstream::testing {

/// PEM files of a test CA, a server certificate it signed, and an unrelated second CA.
struct Certificates {
  std::filesystem::path ca;                  ///< The CA that signed server_certificate.
  std::filesystem::path server_certificate;  ///< CN localhost; SAN IP:127.0.0.1, DNS:localhost.
  std::filesystem::path server_key;          ///< Unencrypted key of server_certificate.
  std::filesystem::path other_ca;            ///< A CA that signed nothing here: trusting it only
                                             ///< must make verification of the server fail.

  /// Whether the openssl command is installed (tests skip otherwise).
  static bool available();

  /// Generates fresh EC P-256 keys and certificates valid for two days into `directory`, which
  /// must exist. Throws std::runtime_error with openssl's output on failure.
  static Certificates generate(const std::filesystem::path& directory);
};

}  // namespace tensorstream::testing
