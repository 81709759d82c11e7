#include "storage/s3/bucket_endpoint.hpp"

#include <cctype>

#include "storage/environment.hpp"
#include "tensorstream/error.hpp"
#include "storage/s3/region.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {
namespace {

// Host-name labels: what a bucket must be to prefix a host.
bool is_dns_compatible(const std::string& bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  for (const char c : bucket) {
    if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)) &&
        c != '.' && c != '-') {
      return false;
    }
  }
  return bucket.front() != '.' && bucket.back() != '.' && bucket.find("..") == std::string::npos;
}

std::string configured_endpoint(const S3Options& options) {
  if (!options.endpoint.empty()) return options.endpoint;
  if (auto endpoint = environment("AWS_ENDPOINT_URL_S3"); !endpoint.empty()) return endpoint;
  return environment("AWS_ENDPOINT_URL");
}

Url parse_endpoint(const std::string& endpoint) {
  Url url = Url::parse(endpoint);
  if ((url.scheme != "http" && url.scheme != "https") || url.path != "/" || !url.query.empty()) {
    throw InvalidArgument("S3 endpoint '" + endpoint +
                          "' must be an http:// or https:// origin without a path");
  }
  return url;
}

}  // namespace

std::string BucketEndpoint::describe() const {
  return origin.origin() + path_prefix + (path_prefix.empty() ? " (virtual-hosted" : " (path-style") +
         ", region " + region + ")";
}

BucketEndpoint resolve_service_endpoint(const S3Options& options) {
  BucketEndpoint endpoint;
  endpoint.region = options.region.empty() ? resolve_region() : options.region;
  const std::string custom = configured_endpoint(options);
  endpoint.origin = custom.empty() ? Url::parse("https://s3." + endpoint.region + ".amazonaws.com")
                                   : parse_endpoint(custom);
  return endpoint;
}

BucketEndpoint resolve_bucket_endpoint(const std::string& bucket, const S3Options& options) {
  if (bucket.empty()) throw InvalidArgument("s3:// URL without a bucket name");
  BucketEndpoint endpoint = resolve_service_endpoint(options);
  const std::string custom = configured_endpoint(options);
  bool virtual_hosted = options.addressing == S3Addressing::virtual_hosted;
  if (options.addressing == S3Addressing::automatic) {
    const bool dotted_under_tls =
        endpoint.origin.scheme == "https" && bucket.find('.') != std::string::npos;
    virtual_hosted = custom.empty() && !dotted_under_tls && is_dns_compatible(bucket);
  }
  if (virtual_hosted) {
    if (!is_dns_compatible(bucket)) {
      throw InvalidArgument("S3 bucket '" + bucket +
                            "' is not a valid host name label, so it cannot be addressed "
                            "virtual-hosted; use path-style addressing");
    }
    endpoint.origin.host = bucket + "." + endpoint.origin.host;
  } else {
    endpoint.path_prefix = "/" + uri_encode(bucket, false);
  }
  return endpoint;
}

}  // namespace tensorstream::s3
