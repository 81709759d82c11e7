#pragma once
// Where the requests for one bucket go: endpoint, addressing style and signing region.

#include <string>

#include "tensorstream/storage/s3_options.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::s3 {

/// The server of a bucket and how its objects are addressed there.
struct BucketEndpoint {
  Url origin;               ///< scheme, host and port of the server.
  std::string path_prefix;  ///< "/bucket" with path-style addressing, empty when virtual-hosted.
  std::string region;       ///< Region requests are signed for.

  /// e.g. "https://models.s3.eu-west-1.amazonaws.com (virtual-hosted, region eu-west-1)".
  std::string describe() const;
};

/// Resolves `bucket`'s endpoint from `options` and, for what they leave empty, the environment
/// (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the region variables and profile). Throws
/// InvalidArgument naming the bucket or endpoint for an empty bucket, an endpoint that is not an
/// http(s) origin, or a bucket name that cannot be a host name under virtual-hosted addressing.
BucketEndpoint resolve_bucket_endpoint(const std::string& bucket, const S3Options& options);

/// The endpoint of requests that name no bucket (ListBuckets): the configured endpoint, else
/// `https://s3.REGION.amazonaws.com`, with an empty path prefix. Throws InvalidArgument as
/// resolve_bucket_endpoint() does for a malformed endpoint.
BucketEndpoint resolve_service_endpoint(const S3Options& options);

}  // namespace tensorstream::s3
