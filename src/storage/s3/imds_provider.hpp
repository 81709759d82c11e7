#pragma once
/// @file
/// Credentials of the IAM role of an EC2 instance, from the instance metadata service (IMDSv2).

#include <chrono>

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3 {

/// Asks the instance metadata service: PUT /latest/api/token for a session token, then
/// GET /latest/meta-data/iam/security-credentials/ for the role name and GET .../ROLE for its
/// credentials. The endpoint is AWS_EC2_METADATA_SERVICE_ENDPOINT, else http://169.254.169.254;
/// AWS_EC2_METADATA_DISABLED=true turns the provider off.
class ImdsProvider : public CredentialsProvider {
 public:
  /// `timeout` bounds each of the three requests; short, since off EC2 nothing answers.
  explicit ImdsProvider(std::chrono::milliseconds timeout = std::chrono::seconds(1));

  /// "EC2 instance metadata".
  std::string name() const override;

  /// Not configured when disabled, unreachable or without a role, unless the endpoint was set
  /// explicitly by AWS_EC2_METADATA_SERVICE_ENDPOINT; then every failure is reported as is.
  boost::asio::awaitable<Credentials> get() override;

 private:
  std::chrono::milliseconds timeout_;
};

}  // namespace tensorstream::s3
