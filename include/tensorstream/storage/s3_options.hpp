#pragma once
/// @file
/// Options of the s3:// backend: region, endpoint, addressing, credentials.

#include <memory>
#include <string>

#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream {

/// How a bucket appears in request URLs.
enum class S3Addressing {
  /// Virtual-hosted on AWS; path-style for custom endpoints (AWS_ENDPOINT_URL, MinIO, Ceph RGW,
  /// R2, SeaweedFS) and for bucket names with dots under https, which the wildcard certificate of
  /// `*.s3.amazonaws.com` does not cover.
  automatic,
  /// `https://bucket.s3.REGION.amazonaws.com/key`, or `bucket.HOST` for a custom endpoint.
  virtual_hosted,
  /// `https://s3.REGION.amazonaws.com/bucket/key`, or `ENDPOINT/bucket/key`.
  path_style,
};

/// Options of S3Store. Empty fields are resolved as the AWS SDKs resolve them.
struct S3Options {
  /// Region requests are signed for; empty: AWS_REGION, AWS_DEFAULT_REGION, the profile's
  /// `region`, else "us-east-1".
  std::string region{};
  /// Service endpoint such as "http://127.0.0.1:9000"; empty: AWS_ENDPOINT_URL_S3, else
  /// AWS_ENDPOINT_URL, else AWS's own endpoint for the region.
  std::string endpoint{};
  /// Where the bucket name goes.
  S3Addressing addressing = S3Addressing::automatic;
  /// Send requests unsigned, for public buckets (the AWS CLI's --no-sign-request).
  bool sign_requests = true;
  /// Source of credentials; null: the SDKs' default chain (environment, shared files, web
  /// identity, container endpoint, EC2 instance metadata).
  std::shared_ptr<s3::CredentialsProvider> credentials{};
};

}  // namespace tensorstream
