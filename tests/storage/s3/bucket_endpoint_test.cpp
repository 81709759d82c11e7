// Where requests for a bucket go: AWS's endpoints, custom endpoints, addressing styles.

#include <gtest/gtest.h>

#include "storage/s3_test_environment.hpp"
#include "storage/s3/bucket_endpoint.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

class S3BucketEndpoint : public testing::AwsEnvironmentTest {};

TEST_F(S3BucketEndpoint, AwsBucketsAreVirtualHostedInTheResolvedRegion) {
  set("AWS_REGION", "eu-west-1");
  const auto endpoint = resolve_bucket_endpoint("models", {});
  EXPECT_EQ(endpoint.origin.str(), "https://models.s3.eu-west-1.amazonaws.com/");
  EXPECT_EQ(endpoint.path_prefix, "");
  EXPECT_EQ(endpoint.region, "eu-west-1");
  EXPECT_EQ(endpoint.describe(),
            "https://models.s3.eu-west-1.amazonaws.com (virtual-hosted, region eu-west-1)");
}

TEST_F(S3BucketEndpoint, DottedBucketsArePathStyleUnderTls) {
  const auto endpoint = resolve_bucket_endpoint("my.models", {});
  EXPECT_EQ(endpoint.origin.str(), "https://s3.us-east-1.amazonaws.com/");
  EXPECT_EQ(endpoint.path_prefix, "/my.models");
}

TEST_F(S3BucketEndpoint, CustomEndpointsArePathStyle) {
  set("AWS_ENDPOINT_URL", "http://127.0.0.1:9000");
  const auto endpoint = resolve_bucket_endpoint("models", {});
  EXPECT_EQ(endpoint.origin.str(), "http://127.0.0.1:9000/");
  EXPECT_EQ(endpoint.path_prefix, "/models");
  EXPECT_EQ(endpoint.describe(), "http://127.0.0.1:9000/models (path-style, region us-east-1)");
}

TEST_F(S3BucketEndpoint, TheS3SpecificEndpointVariableWins) {
  set("AWS_ENDPOINT_URL", "http://general:9000");
  set("AWS_ENDPOINT_URL_S3", "https://s3.example.net");
  EXPECT_EQ(resolve_bucket_endpoint("models", {}).origin.str(), "https://s3.example.net/");
}

TEST_F(S3BucketEndpoint, ExplicitOptionsBeatTheEnvironment) {
  set("AWS_ENDPOINT_URL_S3", "https://s3.example.net");
  set("AWS_REGION", "eu-west-1");
  const auto endpoint = resolve_bucket_endpoint(
      "models", {.region = "ap-south-1",
                 .endpoint = "https://r2.example.com",
                 .addressing = S3Addressing::virtual_hosted});
  EXPECT_EQ(endpoint.origin.str(), "https://models.r2.example.com/");
  EXPECT_EQ(endpoint.region, "ap-south-1");
}

TEST_F(S3BucketEndpoint, PathStyleCanBeForcedOnAws) {
  const auto endpoint =
      resolve_bucket_endpoint("models", {.region = "us-west-2",
                                         .addressing = S3Addressing::path_style});
  EXPECT_EQ(endpoint.origin.str(), "https://s3.us-west-2.amazonaws.com/");
  EXPECT_EQ(endpoint.path_prefix, "/models");
}

TEST_F(S3BucketEndpoint, BucketsThatAreNotHostNamesCannotBeVirtualHosted) {
  try {
    resolve_bucket_endpoint("Models_2", {.addressing = S3Addressing::virtual_hosted});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(),
                 "S3 bucket 'Models_2' is not a valid host name label, so it cannot be addressed "
                 "virtual-hosted; use path-style addressing");
  }
  EXPECT_EQ(resolve_bucket_endpoint("Models_2", {}).path_prefix, "/Models_2");
}

TEST_F(S3BucketEndpoint, AnEndpointWithAPathIsRejected) {
  try {
    resolve_bucket_endpoint("models", {.endpoint = "http://127.0.0.1:9000/base"});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "S3 endpoint 'http://127.0.0.1:9000/base' must be an http:// or "
                               "https:// origin without a path");
  }
}

}  // namespace
}  // namespace tensorstream::s3
