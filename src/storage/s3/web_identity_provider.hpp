#pragma once
/// @file
/// Credentials for a web identity token (EKS IRSA, GitHub Actions OIDC), from STS.

#include <chrono>
#include <string>

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Exchanges the token in AWS_WEB_IDENTITY_TOKEN_FILE for credentials of AWS_ROLE_ARN with STS
/// AssumeRoleWithWebIdentity (an unsigned call), as session AWS_ROLE_SESSION_NAME (else
/// "tensorstream-<epoch ms>").
class WebIdentityProvider : public CredentialsProvider {
 public:
  /// `endpoint` is the STS URL; empty means AWS_ENDPOINT_URL_STS, else
  /// https://sts.REGION.amazonaws.com for the resolved region. `timeout` bounds the call.
  explicit WebIdentityProvider(std::string endpoint = "",
                               std::chrono::milliseconds timeout = std::chrono::seconds(5));

  /// "web identity".
  std::string name() const override;

  /// Not configured without AWS_WEB_IDENTITY_TOKEN_FILE; every other failure (no
  /// AWS_ROLE_ARN, unreadable token file, STS refusing) is reported with STS's error code.
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::string endpoint_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::s3
