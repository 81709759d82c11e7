// The Google token providers against the fixture's token endpoint and metadata server: service
// account JWTs, authorized users, credentials files, GOOGLE_APPLICATION_CREDENTIALS, gcloud's
// file, the metadata server, and their order in the default chain.

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "storage/gcs_test_environment.hpp"
#include "storage/s3_fake_endpoint.hpp"
#include "support/gcs_fixture_server.hpp"
#include "support/rsa_key.hpp"
#include "storage/gcs/authorized_user_provider.hpp"
#include "tensorstream/storage/gcs/chain_provider.hpp"
#include "storage/gcs/credentials_file_provider.hpp"
#include "tensorstream/storage/gcs/default_token_provider.hpp"
#include "storage/gcs/environment_provider.hpp"
#include "storage/gcs/gcloud_provider.hpp"
#include "storage/gcs/metadata_server_provider.hpp"
#include "storage/gcs/service_account_provider.hpp"

namespace tensorstream::gcs {
namespace {

using tensorstream::testing::GcsFixtureServer;
using tensorstream::testing::RsaKeyPair;
using tensorstream::testing::service_account_key_file;

const std::string client_email = "loader@tensorstream-tests.iam.gserviceaccount.com";

std::string closed_host() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor acceptor(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return "127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
}

class GcsTokenProviders : public testing::GcsEnvironmentTest {
 protected:
  GcsTokenProviders() : google_({.service_account_public_key = key().public_key}) {}

  ServiceAccountKey service_account(const std::string& private_key) const {
    return {client_email, private_key, "key-1", google_.token_uri()};
  }

  std::string key_file() const {
    return service_account_key_file(client_email, key().private_key, google_.token_uri());
  }

  std::string authorized_user_file(const std::string& refresh_token) const {
    return R"({"type":"authorized_user","client_id":"tensorstream-client.apps.googleusercontent.com",)"
           R"("client_secret":"tensorstream-client-secret","refresh_token":")" +
           refresh_token + R"(","token_uri":")" + google_.token_uri() + R"("})";
  }

  GcsFixtureServer google_;
};

TEST_F(GcsTokenProviders, ServiceAccountExchangesASignedJwtForAToken) {
  ServiceAccountProvider provider(service_account(key().private_key));
  const auto before = std::chrono::system_clock::now();
  const AccessToken token = run(provider.get());
  const auto after = std::chrono::system_clock::now();
  EXPECT_EQ(token.value, "ya29.fixture-token-1");
  ASSERT_TRUE(token.expiration);
  EXPECT_GE(*token.expiration, before + std::chrono::seconds(3600) - std::chrono::seconds(1));
  EXPECT_LE(*token.expiration, after + std::chrono::seconds(3600));

  const auto received = google_.requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].method, "POST");
  EXPECT_EQ(received[0].target, "/token");
  const std::string grant = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=";
  EXPECT_EQ(received[0].body.substr(0, grant.size()), grant);
}

TEST_F(GcsTokenProviders, JwtSignedWithAnotherKeyIsRefusedWithGooglesMessage) {
  ServiceAccountProvider provider(service_account(RsaKeyPair::generate().private_key));
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Google credentials from service account " + client_email + ": POST " +
                                 google_.token_uri() +
                                 ": HTTP 400 Bad Request: invalid_grant: Invalid JWT Signature.");
  EXPECT_TRUE(failure.configured);
}

TEST_F(GcsTokenProviders, JwtForAnotherAudienceIsRefused) {
  ServiceAccountKey key = service_account(this->key().private_key);
  key.token_uri = google_.endpoint() + "/token?other";
  ServiceAccountProvider provider(key);
  EXPECT_EQ(failure(provider).message,
            "Google credentials from service account " + client_email + ": POST " + key.token_uri +
                ": HTTP 400 Bad Request: invalid_grant: Invalid JWT: Failed audience check.");
}

TEST_F(GcsTokenProviders, UnreadableKeyIsReportedBeforeAnyRequest) {
  ServiceAccountProvider provider(service_account("-----BEGIN PRIVATE KEY-----\nxx\n"));
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Google credentials from service account " + client_email +
                                 ": private_key is not an unencrypted PEM private key");
  EXPECT_TRUE(failure.configured);
  EXPECT_TRUE(google_.requests().empty());
}

TEST_F(GcsTokenProviders, UnreachableTokenEndpointIsReportedWithTheCause) {
  ServiceAccountKey key = service_account(this->key().private_key);
  key.token_uri = "http://" + closed_host() + "/token";
  ServiceAccountProvider provider(key);
  EXPECT_EQ(failure(provider).message, "Google credentials from service account " + client_email +
                                           ": POST " + key.token_uri + ": Connection refused");
}

TEST_F(GcsTokenProviders, AnOverloadedTokenEndpointIsTriedAgain) {
  GcsFixtureServer overloaded({.service_account_public_key = key().public_key,
                               .fail_token_first = 2});
  ServiceAccountProvider provider(
      {client_email, key().private_key, "key-1", overloaded.token_uri()});
  EXPECT_EQ(run(provider.get()).value, "ya29.fixture-token-1");
  EXPECT_EQ(overloaded.requests().size(), 3u);
}

TEST_F(GcsTokenProviders, ATokenEndpointThatStaysOverloadedIsReportedAfterThreeAttempts) {
  GcsFixtureServer overloaded({.service_account_public_key = key().public_key,
                               .fail_token_first = 100});
  ServiceAccountProvider provider(
      {client_email, key().private_key, "key-1", overloaded.token_uri()});
  EXPECT_EQ(failure(provider).message,
            "Google credentials from service account " + client_email + ": POST " +
                overloaded.token_uri() + ": HTTP 503 Service Unavailable: internal_failure");
  EXPECT_EQ(overloaded.requests().size(), 3u);
}

TEST_F(GcsTokenProviders, AuthorizedUserExchangesItsRefreshToken) {
  AuthorizedUserProvider provider({"tensorstream-client.apps.googleusercontent.com",
                                   "tensorstream-client-secret", "tensorstream-refresh-token",
                                   google_.token_uri()});
  EXPECT_EQ(run(provider.get()).value, "ya29.fixture-token-1");
  const auto received = google_.requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].body,
            "grant_type=refresh_token&client_id=tensorstream-client.apps.googleusercontent.com"
            "&client_secret=tensorstream-client-secret&refresh_token=tensorstream-refresh-token");
}

TEST_F(GcsTokenProviders, RevokedRefreshTokenIsReportedWithGooglesMessage) {
  AuthorizedUserProvider provider({"tensorstream-client.apps.googleusercontent.com",
                                   "tensorstream-client-secret", "revoked", google_.token_uri()});
  EXPECT_EQ(failure(provider).message,
            "Google credentials from authorized user: POST " + google_.token_uri() +
                ": HTTP 400 Bad Request: invalid_grant: Token has been expired or revoked.");
}

TEST_F(GcsTokenProviders, CredentialsFileOfEitherTypeGetsAToken) {
  CredentialsFileProvider service_account(write("sa.json", key_file()));
  EXPECT_EQ(run(service_account.get()).value, "ya29.fixture-token-1");
  CredentialsFileProvider user(write("user.json", authorized_user_file("tensorstream-refresh-token")));
  EXPECT_EQ(run(user.get()).value, "ya29.fixture-token-2");
}

TEST_F(GcsTokenProviders, CredentialsFileErrorsNameTheFile) {
  const auto path = home() / "absent.json";
  CredentialsFileProvider absent(path, "GOOGLE_APPLICATION_CREDENTIALS");
  EXPECT_EQ(failure(absent).message, "Google credentials from GOOGLE_APPLICATION_CREDENTIALS: " +
                                         path.string() + ": No such file or directory");

  const auto external = write("external.json", R"({"type":"external_account"})");
  CredentialsFileProvider unsupported(external);
  EXPECT_EQ(failure(unsupported).message,
            "Google credentials from credentials file: " + external.string() +
                ": credentials of type \"external_account\" are not supported (use a "
                "service_account key or gcloud's authorized_user credentials)");

  const auto partial = write("partial.json", R"({"type":"service_account","client_email":"a"})");
  CredentialsFileProvider missing(partial);
  EXPECT_EQ(failure(missing).message,
            "Google credentials from credentials file: " + partial.string() + ": no \"private_key\"");

  const auto text = write("text.json", "not json");
  CredentialsFileProvider garbage(text);
  const auto failure = this->failure(garbage);
  EXPECT_EQ(failure.message.substr(0, failure.message.find(": not a JSON object")),
            "Google credentials from credentials file: " + text.string());
  EXPECT_TRUE(failure.configured);
}

TEST_F(GcsTokenProviders, TheFactoryForAKeyFileGetsATokenAndNamesAMissingFile) {
  const auto provider = gcs::credentials_file_token_provider(write("sa.json", key_file()));
  EXPECT_EQ(run(provider->get()).value, "ya29.fixture-token-1");

  const auto path = home() / "absent.json";
  const auto absent = gcs::credentials_file_token_provider(path);
  EXPECT_EQ(failure(*absent).message,
            "Google credentials from credentials file: " + path.string() +
                ": No such file or directory");
}

TEST_F(GcsTokenProviders, CredentialsFileNamesTheProviderThatFailed) {
  CredentialsFileProvider user(write("user.json", authorized_user_file("revoked")), "gcloud");
  EXPECT_EQ(failure(user).message,
            "Google credentials from gcloud: " + (home() / "user.json").string() +
                " (authorized user): POST " + google_.token_uri() +
                ": HTTP 400 Bad Request: invalid_grant: Token has been expired or revoked.");
}

TEST_F(GcsTokenProviders, EnvironmentVariableNamesTheFileToUse) {
  EnvironmentProvider provider;
  const auto unset = failure(provider);
  EXPECT_EQ(unset.message,
            "Google credentials from GOOGLE_APPLICATION_CREDENTIALS: the variable is not set");
  EXPECT_FALSE(unset.configured);

  set("GOOGLE_APPLICATION_CREDENTIALS", write("key.json", key_file()).string());
  EXPECT_EQ(run(provider.get()).value, "ya29.fixture-token-1");
}

TEST_F(GcsTokenProviders, GcloudFileIsFoundUnderHomeOrCloudsdkConfig) {
  GcloudProvider provider;
  const auto in_home = home() / ".config/gcloud/application_default_credentials.json";
  EXPECT_EQ(GcloudProvider::path(), in_home);
  const auto absent = failure(provider);
  EXPECT_EQ(absent.message, "Google credentials from gcloud application default credentials: " +
                                in_home.string() + " does not exist");
  EXPECT_FALSE(absent.configured);

  write(".config/gcloud/application_default_credentials.json",
        authorized_user_file("tensorstream-refresh-token"));
  EXPECT_EQ(run(provider.get()).value, "ya29.fixture-token-1");

  set("CLOUDSDK_CONFIG", (home() / "elsewhere").string());
  EXPECT_EQ(GcloudProvider::path(), home() / "elsewhere/application_default_credentials.json");
  EXPECT_FALSE(failure(provider).configured);
}

TEST_F(GcsTokenProviders, MetadataServerIsAskedWithTheMetadataFlavorHeader) {
  unset("NO_GCE_CHECK");
  set("GCE_METADATA_HOST", google_.host());
  MetadataServerProvider provider;
  EXPECT_EQ(run(provider.get()).value, "ya29.fixture-token-1");
  const auto received = google_.requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].target, "/computeMetadata/v1/instance/service-accounts/default/token");
  EXPECT_EQ(received[0].metadata_flavor, "Google");
}

TEST_F(GcsTokenProviders, MetadataServerCanBeTurnedOff) {
  set("GCE_METADATA_HOST", google_.host());
  MetadataServerProvider provider;
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Google credentials from GCE metadata server: turned off by NO_GCE_CHECK");
  EXPECT_FALSE(failure.configured);
  EXPECT_TRUE(google_.requests().empty());
}

TEST_F(GcsTokenProviders, ExplicitMetadataHostThatIsDownIsReported) {
  unset("NO_GCE_CHECK");
  const std::string host = closed_host();
  set("GCE_METADATA_HOST", host);
  MetadataServerProvider provider;
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Google credentials from GCE metadata server: GET http://" + host +
                                 "/computeMetadata/v1/instance/service-accounts/default/token: "
                                 "Connection refused");
  EXPECT_TRUE(failure.configured);
}

TEST_F(GcsTokenProviders, MetadataServerAnswersThatAreNotTokensAreReported) {
  unset("NO_GCE_CHECK");
  std::string reply;
  unsigned status = 200;
  s3::testing::FakeEndpoint metadata([&](const s3::testing::FakeEndpoint::Request&) {
    return s3::testing::FakeEndpoint::Reply{status, reply};
  });
  set("GCE_METADATA_HOST", metadata.url().substr(7));
  const std::string url =
      metadata.url() + "/computeMetadata/v1/instance/service-accounts/default/token";
  MetadataServerProvider provider;
  const auto message = [&](unsigned code, std::string body) {
    status = code;
    reply = std::move(body);
    return failure(provider).message;
  };
  EXPECT_EQ(message(200, R"({"token_type":"Bearer"})"),
            "Google credentials from GCE metadata server: malformed token response from " + url +
                ": access_token: The JSON field referenced does not exist in this object.");
  EXPECT_EQ(message(200, R"({"access_token":"t","expires_in":"3599"})"),
            "Google credentials from GCE metadata server: malformed token response from " + url +
                ": expires_in: The JSON element does not have the requested type.");
  EXPECT_EQ(message(200, R"({"access_token":"t","expires_in":9223372036854775807})"),
            "Google credentials from GCE metadata server: malformed token response from " + url +
                ": expires_in 9223372036854775807 is outside [0, 31536000] seconds");
  EXPECT_EQ(message(200, R"({"access_token":"t","expires_in":-1})"),
            "Google credentials from GCE metadata server: malformed token response from " + url +
                ": expires_in -1 is outside [0, 31536000] seconds");
  EXPECT_EQ(message(404, "service account not found"),
            "Google credentials from GCE metadata server: GET " + url +
                ": HTTP 404 Not Found: service account not found");
  EXPECT_EQ(message(400, R"({"error":"invalid_request"})"),
            "Google credentials from GCE metadata server: GET " + url +
                ": HTTP 400 Bad Request: invalid_request");
  status = 200;
  reply = R"({"access_token":"no lifetime"})";
  const AccessToken token = run(provider.get());
  EXPECT_EQ(token.value, "no lifetime");
  EXPECT_EQ(token.expiration, std::nullopt);
}

TEST_F(GcsTokenProviders, DefaultChainPrefersTheEnvironmentThenGcloudThenMetadata) {
  unset("NO_GCE_CHECK");
  set("GCE_METADATA_HOST", google_.host());
  write(".config/gcloud/application_default_credentials.json",
        authorized_user_file("tensorstream-refresh-token"));
  set("GOOGLE_APPLICATION_CREDENTIALS", write("key.json", key_file()).string());
  const auto chain = [] {
    return ChainProvider({std::make_shared<EnvironmentProvider>(),
                          std::make_shared<GcloudProvider>(),
                          std::make_shared<MetadataServerProvider>()});
  };
  auto first = chain();
  run(first.get());
  unset("GOOGLE_APPLICATION_CREDENTIALS");
  auto second = chain();
  run(second.get());
  std::filesystem::remove(home() / ".config/gcloud/application_default_credentials.json");
  auto third = chain();
  run(third.get());

  const auto received = google_.requests();
  ASSERT_EQ(received.size(), 3u);
  EXPECT_TRUE(received[0].body.starts_with("grant_type=urn%3Aietf")) << received[0].body;
  EXPECT_TRUE(received[1].body.starts_with("grant_type=refresh_token")) << received[1].body;
  EXPECT_EQ(received[2].target, "/computeMetadata/v1/instance/service-accounts/default/token");
}

TEST_F(GcsTokenProviders, BrokenEnvironmentCredentialsStopTheChain) {
  write(".config/gcloud/application_default_credentials.json",
        authorized_user_file("tensorstream-refresh-token"));
  const auto path = home() / "absent.json";
  set("GOOGLE_APPLICATION_CREDENTIALS", path.string());
  auto provider = default_token_provider();
  const auto failure = this->failure(*provider);
  EXPECT_EQ(failure.message, "Google credentials from GOOGLE_APPLICATION_CREDENTIALS: " +
                                 path.string() + ": No such file or directory");
  EXPECT_TRUE(failure.configured);
  EXPECT_TRUE(google_.requests().empty());
}

TEST_F(GcsTokenProviders, DefaultChainWithoutCredentialsListsEverySource) {
  auto provider = default_token_provider();
  const auto failure = this->failure(*provider);
  EXPECT_EQ(failure.message,
            "Google credentials from application default credentials: no source has credentials "
            "(GOOGLE_APPLICATION_CREDENTIALS: the variable is not set; gcloud application "
            "default credentials: " +
                (home() / ".config/gcloud/application_default_credentials.json").string() +
                " does not exist; GCE metadata server: turned off by NO_GCE_CHECK)");
  EXPECT_FALSE(failure.configured);
}

}  // namespace
}  // namespace tensorstream::gcs
