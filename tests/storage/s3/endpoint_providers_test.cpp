// The providers that ask an HTTP endpoint: EC2 instance metadata (IMDSv2) and the container
// agent, each against a local fake, alone and in the default chain.

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "storage/s3_fake_endpoint.hpp"
#include "storage/s3_test_environment.hpp"
#include "storage/s3/container_provider.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/storage/s3/default_credentials.hpp"
#include "storage/s3/imds_provider.hpp"

namespace tensorstream::s3 {
namespace {

using namespace std::chrono_literals;
using testing::FakeEndpoint;

const auto far_expiration = std::chrono::sys_days{std::chrono::year{2099} / 1 / 2} + 3h + 4min + 5s;

const std::string imds_document =
    R"({"Code":"Success","LastUpdated":"2026-11-29T12:00:00Z","Type":"AWS-HMAC",)"
    R"("AccessKeyId":"ASIAIMDS","SecretAccessKey":"imds/secret+key",)"
    R"("Token":"imds-session-token","Expiration":"2099-01-02T03:04:05Z"})";

const std::string container_document =
    R"({"AccessKeyId":"ASIAECS","SecretAccessKey":"ecs/secret","Token":"ecs-token",)"
    R"("Expiration":"2099-01-02T03:04:05Z","RoleArn":"arn:aws:iam::1:role/task"})";

// A well-behaved instance metadata service for role "my-role" that insists on IMDSv2 tokens.
FakeEndpoint::Reply imds(const FakeEndpoint::Request& request) {
  if (request.target == "/latest/api/token") {
    if (request.method != "PUT" ||
        request.header("x-aws-ec2-metadata-token-ttl-seconds") == "<absent>") {
      return {400, "bad token request"};
    }
    return {200, "imds-token"};
  }
  if (request.header("x-aws-ec2-metadata-token") != "imds-token") return {401, ""};
  if (request.target == "/latest/meta-data/iam/security-credentials/") return {200, "my-role\n"};
  if (request.target == "/latest/meta-data/iam/security-credentials/my-role") {
    return {200, imds_document};
  }
  return {404, "not found"};
}

class S3EndpointProviders : public testing::AwsEnvironmentTest {
 protected:
  void use_imds(const FakeEndpoint& endpoint) {
    unset("AWS_EC2_METADATA_DISABLED");
    set("AWS_EC2_METADATA_SERVICE_ENDPOINT", endpoint.url());
  }
};

TEST_F(S3EndpointProviders, ImdsFetchesTokenThenRoleThenCredentials) {
  FakeEndpoint endpoint(imds);
  use_imds(endpoint);
  ImdsProvider provider;
  const auto credentials = load(provider);
  EXPECT_EQ(credentials.access_key_id, "ASIAIMDS");
  EXPECT_EQ(credentials.secret_access_key, "imds/secret+key");
  EXPECT_EQ(credentials.session_token, "imds-session-token");
  EXPECT_EQ(credentials.expiration, far_expiration);

  const auto requests = endpoint.requests();
  ASSERT_EQ(requests.size(), 3u);
  EXPECT_EQ(requests[0].method, "PUT");
  EXPECT_EQ(requests[0].target, "/latest/api/token");
  EXPECT_EQ(requests[0].header("x-aws-ec2-metadata-token-ttl-seconds"), "21600");
  EXPECT_EQ(requests[1].method, "GET");
  EXPECT_EQ(requests[1].target, "/latest/meta-data/iam/security-credentials/");
  EXPECT_EQ(requests[1].header("x-aws-ec2-metadata-token"), "imds-token");
  EXPECT_EQ(requests[2].method, "GET");
  EXPECT_EQ(requests[2].target, "/latest/meta-data/iam/security-credentials/my-role");
  EXPECT_EQ(requests[2].header("x-aws-ec2-metadata-token"), "imds-token");
  EXPECT_EQ(requests[2].header("host"), endpoint.url().substr(7));
}

TEST_F(S3EndpointProviders, ImdsDisabledSendsNothing) {
  FakeEndpoint endpoint(imds);
  use_imds(endpoint);
  set("AWS_EC2_METADATA_DISABLED", "TRUE");
  ImdsProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(
      result.message,
      "AWS credentials from EC2 instance metadata: disabled by AWS_EC2_METADATA_DISABLED=true");
  EXPECT_FALSE(result.configured);
  EXPECT_TRUE(endpoint.requests().empty());
}

TEST_F(S3EndpointProviders, ImdsDisabledOnlyByTrue) {
  FakeEndpoint endpoint(imds);
  use_imds(endpoint);
  set("AWS_EC2_METADATA_DISABLED", "false");
  ImdsProvider provider;
  EXPECT_EQ(load(provider).access_key_id, "ASIAIMDS");
}

TEST_F(S3EndpointProviders, ImdsUnreachableNamesTheRequestAndCause) {
  const std::string url = FakeEndpoint::closed_url();
  unset("AWS_EC2_METADATA_DISABLED");
  set("AWS_EC2_METADATA_SERVICE_ENDPOINT", url + "/");
  ImdsProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from EC2 instance metadata: PUT " + url +
                                "/latest/api/token: Connection refused");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3EndpointProviders, ImdsTimeoutIsReported) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request&) {
    return FakeEndpoint::Reply{200, "", true};
  });
  use_imds(endpoint);
  ImdsProvider provider(100ms);
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from EC2 instance metadata: PUT " + endpoint.url() +
                                "/latest/api/token: timed out after 100 ms");
}

TEST_F(S3EndpointProviders, ImdsWithoutRoleReportsTheStatus) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request& request) -> FakeEndpoint::Reply {
    if (request.target == "/latest/api/token") return {200, "imds-token"};
    return {404, "no role"};
  });
  use_imds(endpoint);
  ImdsProvider provider;
  EXPECT_EQ(failure(provider).message,
            "AWS credentials from EC2 instance metadata: GET " + endpoint.url() +
                "/latest/meta-data/iam/security-credentials/: HTTP 404 Not Found: no role");
}

TEST_F(S3EndpointProviders, ImdsErrorCodeIsReported) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request& request) -> FakeEndpoint::Reply {
    if (request.target == "/latest/api/token") return {200, "imds-token"};
    if (request.target.ends_with("/")) return {200, "my-role"};
    return {200, R"({"Code":"AssumeRoleUnauthorizedAccess","Message":"denied"})"};
  });
  use_imds(endpoint);
  ImdsProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from EC2 instance metadata: " + endpoint.url() +
                                "/latest/meta-data/iam/security-credentials/my-role answered "
                                "Code \"AssumeRoleUnauthorizedAccess\": denied");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3EndpointProviders, ImdsMalformedDocumentIsReported) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request& request) -> FakeEndpoint::Reply {
    if (request.target == "/latest/api/token") return {200, "imds-token"};
    if (request.target.ends_with("/")) return {200, "my-role"};
    return {200, R"({"AccessKeyId":"A","SecretAccessKey":"B","Expiration":"tomorrow"})"};
  });
  use_imds(endpoint);
  ImdsProvider provider;
  EXPECT_EQ(failure(provider).message,
            "AWS credentials from EC2 instance metadata: malformed credentials from " +
                endpoint.url() +
                "/latest/meta-data/iam/security-credentials/my-role: "
                "Expiration \"tomorrow\" is not ISO 8601 UTC");
}

TEST_F(S3EndpointProviders, ContainerRelativeUriGoesToTheAgent) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request& request) -> FakeEndpoint::Reply {
    if (request.target == "/v2/credentials/abc-123") return {200, container_document};
    return {404, ""};
  });
  set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/credentials/abc-123");
  ContainerProvider provider(endpoint.url());
  const auto credentials = load(provider);
  EXPECT_EQ(credentials.access_key_id, "ASIAECS");
  EXPECT_EQ(credentials.secret_access_key, "ecs/secret");
  EXPECT_EQ(credentials.session_token, "ecs-token");
  EXPECT_EQ(credentials.expiration, far_expiration);
  const auto requests = endpoint.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].method, "GET");
  EXPECT_EQ(requests[0].header("authorization"), "<absent>");
}

TEST_F(S3EndpointProviders, ContainerFullUriSendsTheAuthorizationToken) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request& request) -> FakeEndpoint::Reply {
    if (request.header("authorization") != "Basic pod-token") return {401, "unauthorized"};
    return {200, container_document};
  });
  set("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.url() + "/creds?id=7");
  set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "Basic pod-token");
  ContainerProvider provider;
  EXPECT_EQ(load(provider).access_key_id, "ASIAECS");
  ASSERT_EQ(endpoint.requests().size(), 1u);
  EXPECT_EQ(endpoint.requests()[0].target, "/creds?id=7");
}

TEST_F(S3EndpointProviders, ContainerTokenFileWinsOverToken) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request& request) -> FakeEndpoint::Reply {
    if (request.header("authorization") != "file-token") return {401, "unauthorized"};
    return {200, container_document};
  });
  set("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.url() + "/creds");
  set("AWS_CONTAINER_AUTHORIZATION_TOKEN", "variable-token");
  set("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", write("eks/token", "file-token\n").string());
  ContainerProvider provider;
  EXPECT_EQ(load(provider).access_key_id, "ASIAECS");
}

TEST_F(S3EndpointProviders, ContainerRejectedRequestIsAnError) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request&) {
    return FakeEndpoint::Reply{401, "unauthorized"};
  });
  set("AWS_CONTAINER_CREDENTIALS_FULL_URI", endpoint.url() + "/creds");
  ContainerProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from container endpoint: GET " + endpoint.url() +
                                "/creds: HTTP 401 Unauthorized: unauthorized");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3EndpointProviders, ContainerFullUriMustStayOnTheMachine) {
  set("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://169.254.169.254/creds");
  ContainerProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from container endpoint: "
            "AWS_CONTAINER_CREDENTIALS_FULL_URI http://169.254.169.254/creds: "
            "host must be loopback, 169.254.170.2 or 169.254.170.23");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3EndpointProviders, ChainTriesContainerBeforeInstanceMetadata) {
  FakeEndpoint metadata(imds);
  FakeEndpoint container([](const FakeEndpoint::Request&) {
    return FakeEndpoint::Reply{200, container_document};
  });
  use_imds(metadata);
  set("AWS_CONTAINER_CREDENTIALS_FULL_URI", container.url() + "/creds");
  auto provider = default_credentials_provider();
  EXPECT_EQ(load(*provider).access_key_id, "ASIAECS");
  EXPECT_TRUE(metadata.requests().empty());
}

TEST_F(S3EndpointProviders, ChainEndsAtInstanceMetadataAndCachesItsCredentials) {
  FakeEndpoint metadata(imds);
  use_imds(metadata);
  auto provider = default_credentials_provider();
  EXPECT_EQ(load(*provider).access_key_id, "ASIAIMDS");
  EXPECT_EQ(load(*provider).access_key_id, "ASIAIMDS");
  EXPECT_EQ(metadata.requests().size(), 3u);
}

TEST_F(S3EndpointProviders, ChainReportsAnUnreachableInstanceMetadataService) {
  const std::string url = FakeEndpoint::closed_url();
  unset("AWS_EC2_METADATA_DISABLED");
  set("AWS_EC2_METADATA_SERVICE_ENDPOINT", url);
  auto provider = default_credentials_provider();
  EXPECT_EQ(failure(*provider).message, "AWS credentials from EC2 instance metadata: PUT " + url +
                                            "/latest/api/token: Connection refused");
}

}  // namespace
}  // namespace tensorstream::s3
