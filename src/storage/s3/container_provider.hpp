#pragma once
/// @file
/// Credentials of an ECS task or EKS pod, from the container credentials endpoint.

#include <chrono>
#include <string>

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// GETs AWS_CONTAINER_CREDENTIALS_RELATIVE_URI from the ECS agent, or else
/// AWS_CONTAINER_CREDENTIALS_FULL_URI, sending as Authorization the contents of
/// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or else AWS_CONTAINER_AUTHORIZATION_TOKEN.
///
/// As in the AWS SDKs, a full URI must point to a loopback address or to the ECS/EKS agents
/// (169.254.170.2, 169.254.170.23), so that the token cannot be sent elsewhere in clear. (The
/// SDKs also accept https to any host; this provider does not.)
class ContainerProvider : public CredentialsProvider {
 public:
  /// `agent` is where relative URIs go (tests point it at a local server); `timeout` bounds
  /// the request.
  explicit ContainerProvider(std::string agent = "http://169.254.170.2",
                             std::chrono::milliseconds timeout = std::chrono::seconds(2));

  /// "container endpoint".
  std::string name() const override;

  /// Not configured when neither URI variable is set; every other failure is reported.
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::string agent_;
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::s3
