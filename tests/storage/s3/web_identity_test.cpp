// STS AssumeRoleWithWebIdentity against a local fake of STS, over http and https.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <string>

#include "storage/s3_fake_endpoint.hpp"
#include "storage/s3_test_environment.hpp"
#include "support/certificates.hpp"
#include "support/nginx_server.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/storage/s3/default_credentials.hpp"
#include "storage/s3/web_identity_provider.hpp"

namespace tensorstream::s3 {
namespace {

using namespace std::chrono_literals;
using testing::FakeEndpoint;

const std::string role = "arn:aws:iam::123456789012:role/s3-reader";

const auto expiration = std::chrono::sys_days{std::chrono::year{2099} / 1 / 1};

// An AssumeRoleWithWebIdentity response as STS writes it.
std::string sts_document(const std::string& expiration_text) {
  return "<AssumeRoleWithWebIdentityResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"
         "<AssumeRoleWithWebIdentityResult>"
         "<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/s3-reader/s</Arn>"
         "<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>"
         "<Credentials><AccessKeyId>ASIASTS</AccessKeyId>"
         "<SecretAccessKey>sts/secret+key</SecretAccessKey>"
         "<SessionToken>sts-session-token</SessionToken>"
         "<Expiration>" +
         expiration_text +
         "</Expiration></Credentials></AssumeRoleWithWebIdentityResult>"
         "<ResponseMetadata><RequestId>r-1</RequestId></ResponseMetadata>"
         "</AssumeRoleWithWebIdentityResponse>";
}

// STS, for requests that carry the form.
FakeEndpoint::Reply sts(const FakeEndpoint::Request& request) {
  if (request.method != "POST" || request.target != "/" ||
      request.header("content-type") != "application/x-www-form-urlencoded") {
    return {400, "unexpected request"};
  }
  return {200, sts_document("2099-01-01T00:00:00Z")};
}

class S3WebIdentity : public testing::AwsEnvironmentTest {
 protected:
  void configure() {
    set("AWS_WEB_IDENTITY_TOKEN_FILE", write("token", "eyJ.token+value/x=\n").string());
    set("AWS_ROLE_ARN", role);
    set("AWS_ROLE_SESSION_NAME", "my session");
  }
};

TEST_F(S3WebIdentity, ExchangesTheTokenForRoleCredentials) {
  FakeEndpoint endpoint(sts);
  configure();
  WebIdentityProvider provider(endpoint.url());
  const auto credentials = load(provider);
  EXPECT_EQ(credentials.access_key_id, "ASIASTS");
  EXPECT_EQ(credentials.secret_access_key, "sts/secret+key");
  EXPECT_EQ(credentials.session_token, "sts-session-token");
  EXPECT_EQ(credentials.expiration, expiration);
  const auto requests = endpoint.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].body,
            "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"
            "&RoleArn=arn%3Aaws%3Aiam%3A%3A123456789012%3Arole%2Fs3-reader"
            "&RoleSessionName=my%20session&WebIdentityToken=eyJ.token%2Bvalue%2Fx%3D");
  // An unsigned call: the token is the proof of identity.
  EXPECT_EQ(requests[0].header("authorization"), "<absent>");
}

TEST_F(S3WebIdentity, EndpointFromEnvironmentAndGeneratedSessionName) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request&) {
    return FakeEndpoint::Reply{200, sts_document("2099-01-01T00:00:00Z")};
  });
  configure();
  unset("AWS_ROLE_SESSION_NAME");
  set("AWS_ENDPOINT_URL_STS", endpoint.url());
  WebIdentityProvider provider;
  EXPECT_EQ(load(provider).expiration, expiration);
  ASSERT_EQ(endpoint.requests().size(), 1u);
  EXPECT_NE(endpoint.requests()[0].body.find("&RoleSessionName=tensorstream-"), std::string::npos);
}

TEST_F(S3WebIdentity, WithoutTokenFileIsNotConfigured) {
  set("AWS_ROLE_ARN", role);
  WebIdentityProvider provider("http://127.0.0.1:1");
  const auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from web identity: AWS_WEB_IDENTITY_TOKEN_FILE is not set");
  EXPECT_FALSE(result.configured);
}

TEST_F(S3WebIdentity, AThrottledStsIsTriedAgain) {
  std::atomic<int> calls{0};
  FakeEndpoint endpoint([&](const FakeEndpoint::Request& request) {
    if (calls++ < 2) {
      return FakeEndpoint::Reply{
          503, "<ErrorResponse><Error><Code>Throttling</Code><Message>Rate exceeded</Message>"
               "</Error></ErrorResponse>"};
    }
    return sts(request);
  });
  configure();
  WebIdentityProvider provider(endpoint.url());
  EXPECT_EQ(load(provider).access_key_id, "ASIASTS");
  EXPECT_EQ(endpoint.requests().size(), 3u);
}

TEST_F(S3WebIdentity, TokenFileWithoutRoleIsAnError) {
  set("AWS_WEB_IDENTITY_TOKEN_FILE", write("token", "t").string());
  WebIdentityProvider provider("http://127.0.0.1:1");
  const auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from web identity: AWS_WEB_IDENTITY_TOKEN_FILE is "
            "set but AWS_ROLE_ARN is not");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3WebIdentity, MissingTokenFileIsAnError) {
  const auto missing = (home() / "nowhere/token").string();
  set("AWS_WEB_IDENTITY_TOKEN_FILE", missing);
  set("AWS_ROLE_ARN", role);
  WebIdentityProvider provider("http://127.0.0.1:1");
  EXPECT_EQ(failure(provider).message,
            "AWS credentials from web identity: "
            "AWS_WEB_IDENTITY_TOKEN_FILE " +
                missing + ": No such file or directory");
}

TEST_F(S3WebIdentity, StsErrorCodeAndMessageAreReported) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request&) {
    return FakeEndpoint::Reply{
        400,
        "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error>"
        "<Type>Sender</Type><Code>InvalidIdentityToken</Code><Message>Token expired</Message>"
        "</Error><RequestId>r-2</RequestId></ErrorResponse>"};
  });
  configure();
  WebIdentityProvider provider(endpoint.url());
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from web identity: POST " + endpoint.url() +
                                "/: AssumeRoleWithWebIdentity for " + role +
                                " failed: HTTP 400 InvalidIdentityToken: Token expired");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3WebIdentity, MalformedResponseIsReported) {
  FakeEndpoint endpoint([](const FakeEndpoint::Request&) {
    return FakeEndpoint::Reply{200, sts_document("soon")};
  });
  configure();
  WebIdentityProvider provider(endpoint.url());
  EXPECT_EQ(failure(provider).message,
            "AWS credentials from web identity: malformed AssumeRoleWithWebIdentity response "
            "from " +
                endpoint.url() + "/: Expiration is not ISO 8601 UTC");
}

TEST_F(S3WebIdentity, ChainTriesWebIdentityBeforeContainer) {
  FakeEndpoint endpoint(sts);
  configure();
  set("AWS_ENDPOINT_URL_STS", endpoint.url());
  set("AWS_CONTAINER_CREDENTIALS_FULL_URI", FakeEndpoint::closed_url() + "/creds");
  auto provider = default_credentials_provider();
  EXPECT_EQ(load(*provider).access_key_id, "ASIASTS");
}

// nginx stands in for STS over https, answering every request with the same document.
class S3WebIdentityTls : public S3WebIdentity {
 protected:
  static void SetUpTestSuite() {
    if (!tensorstream::testing::Certificates::available() ||
        !tensorstream::testing::NginxServer::available()) {
      return;
    }
    pki_ = std::make_unique<tensorstream::testing::TempDir>();
    const auto certificates = tensorstream::testing::Certificates::generate(pki_->path());
    ca_ = certificates.ca;
    other_ca_ = certificates.other_ca;
    nginx_ = std::make_unique<tensorstream::testing::NginxServer>(
        tensorstream::testing::NginxServer::Options{
            .root = pki_->path(),
            .certificate = certificates.server_certificate,
            .key = certificates.server_key,
            .extra_config = "location = / { default_type text/xml; return 200 '" +
                            sts_document("2099-01-01T00:00:00Z") + "'; }"});
  }

  static void TearDownTestSuite() {
    nginx_.reset();
    pki_.reset();
  }

  void SetUp() override {
    if (!nginx_) TENSORSTREAM_SKIP_UNLESS_CI("the openssl command or nginx is not installed");
  }

  static inline std::unique_ptr<tensorstream::testing::TempDir> pki_;
  static inline std::unique_ptr<tensorstream::testing::NginxServer> nginx_;
  static inline std::filesystem::path ca_;
  static inline std::filesystem::path other_ca_;
};

TEST_F(S3WebIdentityTls, HttpsWithTheRightCa) {
  configure();
  set("SSL_CERT_FILE", ca_.string());
  ASSERT_EQ(nginx_->base_url().substr(0, 8), "https://");
  WebIdentityProvider provider(nginx_->base_url());
  const auto credentials = load(provider);
  EXPECT_EQ(credentials.access_key_id, "ASIASTS");
  EXPECT_EQ(credentials.expiration, expiration);
}

TEST_F(S3WebIdentityTls, HttpsWithTheWrongCaIsRejected) {
  configure();
  set("SSL_CERT_FILE", other_ca_.string());
  WebIdentityProvider provider(nginx_->base_url());
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from web identity: POST " + nginx_->base_url() +
                                "/: certificate verify failed (SSL routines)");
  EXPECT_TRUE(result.configured);
}

}  // namespace
}  // namespace tensorstream::s3
