#pragma once
// An independent check of our SigV4 signatures: botocore, in a proxy in front of s3rver.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream::testing {

/// tests/support/s3_signature_verifier.py on an ephemeral 127.0.0.1 port: every signed request
/// is re-verified with Debian's python3-botocore, then forwarded to the S3 server on
/// `upstream_port`; a wrong signature gets S3's 403 SignatureDoesNotMatch.
class SignatureVerifier {
 public:
  /// What the verifier saw so far.
  struct Counts {
    int verified = 0;  ///< Signed requests whose signature botocore reproduced.
    int rejected = 0;  ///< Requests with a wrong or malformed signature.
    int unsigned_requests = 0;  ///< Requests without Authorization.
  };

  /// Why the verifier cannot run here (no /usr/bin/python3 with botocore), or nullopt.
  static std::optional<std::string> unavailable();

  /// Starts the proxy, knowing the secrets of `keys` (access key id, secret key).
  SignatureVerifier(std::uint16_t upstream_port,
                    const std::vector<std::pair<std::string, std::string>>& keys);

  /// Stops the proxy.
  ~SignatureVerifier();

  SignatureVerifier(const SignatureVerifier&) = delete;
  SignatureVerifier& operator=(const SignatureVerifier&) = delete;

  /// "http://127.0.0.1:PORT", the endpoint to give clients.
  std::string endpoint() const;

  /// The counts, fetched from the proxy.
  Counts counts() const;

  /// The proxy's log: each rejected request with botocore's canonical request.
  std::string log() const;

 private:
  TempDir directory_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ChildProcess> process_;
};

}  // namespace tensorstream::testing
