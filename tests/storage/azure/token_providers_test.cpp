// The Entra ID token providers against a fixture token endpoint, IMDS and App Service endpoint:
// client secrets and certificates from the environment, workload identity, managed identity,
// their order in the chain, and one token request however many callers a cache has.

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "storage/azure/client_certificate.hpp"
#include "storage/azure/entra_id_providers.hpp"
#include "storage/azure/environment_provider.hpp"
#include "storage/azure/managed_identity_provider.hpp"
#include "storage/azure/token_endpoint.hpp"
#include "storage/azure/token_response.hpp"
#include "storage/azure/workload_identity_provider.hpp"
#include "support/azure_token_server.hpp"
#include "support/form_fields.hpp"
#include "support/isolated_environment_test.hpp"
#include "support/jwt_parts.hpp"
#include "support/rsa_certificate.hpp"
#include "tensorstream/storage/azure/credentials_provider.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::azure::entra_id_tests {

using tensorstream::testing::AzureTokenServer;
using tensorstream::testing::RsaCertificate;
using tensorstream::testing::RsaKeyPair;
using Flow = AzureTokenServer::Flow;
using Clock = std::chrono::system_clock;

constexpr std::string_view imds_token_target =
    "/metadata/identity/oauth2/token?api-version=2018-02-01"
    "&resource=https%3A%2F%2Fstorage.azure.com%2F";

// What Kubernetes projects into the pod: a JWT of its service account (not checked here).
const std::string federated_token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2ln";

// The application's certificate, and one of another key; made once (RSA keys take a while).
const RsaCertificate& certificate() {
  static const auto made = RsaCertificate::generate(RsaKeyPair::generate(), "tensorstream-app");
  return made;
}
const RsaCertificate& other_certificate() {
  static const auto made = RsaCertificate::generate(RsaKeyPair::generate(), "tensorstream-app");
  return made;
}

// Clears every variable the Entra ID providers read, and runs a token server.
class AzureEntraIdProviders : public tensorstream::testing::IsolatedEnvironmentTest {
 protected:
  AzureEntraIdProviders()
      : IsolatedEnvironmentTest({"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET",
                                 "AZURE_CLIENT_CERTIFICATE_PATH",
                                 "AZURE_CLIENT_CERTIFICATE_PASSWORD",
                                 "AZURE_FEDERATED_TOKEN_FILE", "AZURE_AUTHORITY_HOST",
                                 "AZURE_POD_IDENTITY_AUTHORITY_HOST", "IDENTITY_ENDPOINT",
                                 "IDENTITY_HEADER", "SSL_CERT_FILE"}),
        entra_({.client_certificate = certificate().certificate,
                .federated_token = federated_token}) {
    set("AZURE_AUTHORITY_HOST", entra_.authority());
  }

  AzureTokenServer::Options options() const { return {}; }

  // The application of the server, with its client secret.
  void set_client_secret() {
    set("AZURE_TENANT_ID", options().tenant);
    set("AZURE_CLIENT_ID", options().client_id);
    set("AZURE_CLIENT_SECRET", options().client_secret);
  }

  // The workload identity variables, with the token file holding `token`.
  void set_workload_identity(const std::string& token) {
    set("AZURE_TENANT_ID", options().tenant);
    set("AZURE_CLIENT_ID", options().client_id);
    set("AZURE_FEDERATED_TOKEN_FILE", write("azure-identity-token", token).string());
  }

  // Expects `credentials` to be the last token the server issued, living `lifetime` from a time
  // between `before` and now.
  void expect_last_token(const Credentials& credentials, Clock::time_point before,
                         std::chrono::seconds lifetime = std::chrono::seconds(3600)) const {
    const auto after = Clock::now();
    EXPECT_EQ(credentials.kind, Credentials::Kind::bearer);
    EXPECT_EQ(credentials.secret, entra_.last_token());
    EXPECT_EQ(credentials.account, "");
    ASSERT_TRUE(credentials.expiration);
    EXPECT_GE(*credentials.expiration, before + lifetime - std::chrono::seconds(1));
    EXPECT_LE(*credentials.expiration, after + lifetime);
  }

  AzureTokenServer entra_;
};

TEST_F(AzureEntraIdProviders, ClientSecretIsExchangedForABearerToken) {
  set_client_secret();
  EnvironmentProvider provider;
  const auto before = Clock::now();
  expect_last_token(run(provider.get()), before);
  const auto received = entra_.requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].method, "POST");
  EXPECT_EQ(received[0].target, "/" + options().tenant + "/oauth2/v2.0/token");
  EXPECT_EQ(received[0].body, "grant_type=client_credentials&client_id=" + options().client_id +
                                  "&scope=https%3A%2F%2Fstorage.azure.com%2F.default"
                                  "&client_secret=tensorstream~client.secret");
  EXPECT_EQ(entra_.requests(Flow::client_secret), 1);
}

TEST_F(AzureEntraIdProviders, AWrongClientSecretIsReportedWithEntrasMessage) {
  set_client_secret();
  set("AZURE_CLIENT_SECRET", "stale");
  EnvironmentProvider provider;
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message,
            "Azure credentials from environment: POST " + entra_.token_url() +
                ": HTTP 401 Unauthorized: invalid_client: AADSTS7000215: Invalid client secret "
                "provided. Ensure the secret being sent in the request is the client secret "
                "value, not the client secret ID, for a secret added to app '" +
                options().client_id + "'.");
  EXPECT_TRUE(failure.configured);
}

TEST_F(AzureEntraIdProviders, AnUnknownTenantIsReportedWithEntrasMessage) {
  set_client_secret();
  set("AZURE_TENANT_ID", "contoso.onmicrosoft.com");
  EnvironmentProvider provider;
  EXPECT_EQ(failure(provider).message,
            "Azure credentials from environment: POST " + entra_.authority() +
                "/contoso.onmicrosoft.com/oauth2/v2.0/token: HTTP 400 Bad Request: "
                "invalid_request: AADSTS90002: Tenant 'contoso.onmicrosoft.com' not found. Check "
                "to make sure you have the correct tenant ID and are signing into the correct "
                "cloud.");
}

TEST_F(AzureEntraIdProviders, EnvironmentWithoutAnApplicationIsNotConfigured) {
  EnvironmentProvider provider;
  const auto message = [&] {
    const auto failure = this->failure(provider);
    EXPECT_FALSE(failure.configured) << failure.message;
    return failure.message;
  };
  EXPECT_EQ(message(), "Azure credentials from environment: AZURE_TENANT_ID is not set");
  set("AZURE_TENANT_ID", options().tenant);
  EXPECT_EQ(message(), "Azure credentials from environment: AZURE_CLIENT_ID is not set");
  set("AZURE_CLIENT_ID", options().client_id);
  EXPECT_EQ(message(), "Azure credentials from environment: neither AZURE_CLIENT_SECRET nor "
                       "AZURE_CLIENT_CERTIFICATE_PATH is set");
  // A secret without the application is no credential either, as for azure-identity.
  unset("AZURE_TENANT_ID");
  set("AZURE_CLIENT_SECRET", options().client_secret);
  EXPECT_EQ(message(), "Azure credentials from environment: AZURE_TENANT_ID is not set");
  EXPECT_TRUE(entra_.requests().empty());
}

TEST_F(AzureEntraIdProviders, ClientCertificateSignsTheAssertion) {
  set("AZURE_TENANT_ID", options().tenant);
  set("AZURE_CLIENT_ID", options().client_id);
  // Key first, then the certificate: azure-identity reads either order.
  set("AZURE_CLIENT_CERTIFICATE_PATH",
      write("app.pem", certificate().private_key + certificate().certificate).string());
  EnvironmentProvider provider;
  const auto before = Clock::now();
  expect_last_token(run(provider.get()), before);
  EXPECT_EQ(entra_.requests(Flow::client_certificate), 1);

  auto form = tensorstream::testing::parse_pairs(entra_.requests().at(0).body, true);
  EXPECT_EQ(form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
  EXPECT_FALSE(form.contains("client_secret"));
  const auto assertion = tensorstream::testing::JwtParts::parse(form["client_assertion"]);
  ASSERT_TRUE(assertion);
  EXPECT_EQ(assertion->header,
            R"({"alg":"RS256","typ":"JWT","x5t":")" + certificate().thumbprint() + R"("})");
  EXPECT_TRUE(assertion->claims.starts_with(R"({"aud":")" + entra_.token_url() +
                                            R"(","iss":")" + options().client_id +
                                            R"(","sub":")" + options().client_id + R"(","jti":")"))
      << assertion->claims;
}

TEST_F(AzureEntraIdProviders, ClientAssertionsLiveTenMinutesAndAreEachUnique) {
  const auto key = ClientCertificate::parse(certificate().certificate + certificate().private_key, "");
  EXPECT_EQ(key.thumbprint, certificate().thumbprint());
  const auto issued = Clock::time_point(std::chrono::seconds(1700000000));
  const auto first = tensorstream::testing::JwtParts::parse(
      client_assertion(key, "app", "https://login.example/t/oauth2/v2.0/token", issued));
  const auto second = tensorstream::testing::JwtParts::parse(
      client_assertion(key, "app", "https://login.example/t/oauth2/v2.0/token", issued));
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->claims.ends_with(R"(","nbf":1700000000,"exp":1700000600})"))
      << first->claims;
  EXPECT_NE(first->claims, second->claims);  // The jti.
  EXPECT_TRUE(tensorstream::testing::verify_rs256(certificate().public_key,
                                                  first->signing_input, first->signature));
}

TEST_F(AzureEntraIdProviders, AnEncryptedCertificateKeyNeedsItsPassword) {
  set("AZURE_TENANT_ID", options().tenant);
  set("AZURE_CLIENT_ID", options().client_id);
  const auto path = write("app.pem", certificate().certificate +
                                         certificate().encrypted_private_key("pass phrase"));
  set("AZURE_CLIENT_CERTIFICATE_PATH", path.string());
  EnvironmentProvider provider;
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Azure credentials from environment: " + path.string() +
                                 ": the private key is encrypted, and no password was given");
  EXPECT_TRUE(failure.configured);
  set("AZURE_CLIENT_CERTIFICATE_PASSWORD", "wrong");
  EXPECT_EQ(this->failure(provider).message,
            "Azure credentials from environment: " + path.string() +
                ": the password does not decrypt the private key");
  set("AZURE_CLIENT_CERTIFICATE_PASSWORD", "pass phrase");
  const auto before = Clock::now();
  expect_last_token(run(provider.get()), before);
  EXPECT_EQ(entra_.requests(Flow::client_certificate), 1);
}

TEST_F(AzureEntraIdProviders, BrokenCertificateFilesAreReportedBeforeAnyRequest) {
  set("AZURE_TENANT_ID", options().tenant);
  set("AZURE_CLIENT_ID", options().client_id);
  EnvironmentProvider provider;
  const auto message = [&](const std::filesystem::path& path) {
    set("AZURE_CLIENT_CERTIFICATE_PATH", path.string());
    const auto failure = this->failure(provider);
    EXPECT_TRUE(failure.configured) << failure.message;
    return failure.message;
  };
  const std::string prefix = "Azure credentials from environment: ";
  const auto absent = home() / "absent.pem";
  EXPECT_EQ(message(absent), prefix + absent.string() + ": No such file or directory");
  const auto key_only = write("key.pem", certificate().private_key);
  EXPECT_EQ(message(key_only), prefix + key_only.string() + ": no PEM certificate in the file");
  const auto certificate_only = write("certificate.pem", certificate().certificate);
  EXPECT_EQ(message(certificate_only),
            prefix + certificate_only.string() + ": no PEM private key in the file");
  const auto mismatched =
      write("mismatched.pem", certificate().certificate + other_certificate().private_key);
  EXPECT_EQ(message(mismatched),
            prefix + mismatched.string() + ": the private key is not the certificate's");
  EXPECT_TRUE(entra_.requests().empty());
}

TEST_F(AzureEntraIdProviders, ACertificateTheApplicationDoesNotHaveIsRefused) {
  set("AZURE_TENANT_ID", options().tenant);
  set("AZURE_CLIENT_ID", options().client_id);
  set("AZURE_CLIENT_CERTIFICATE_PATH",
      write("other.pem", other_certificate().certificate + other_certificate().private_key)
          .string());
  EnvironmentProvider provider;
  EXPECT_EQ(failure(provider).message,
            "Azure credentials from environment: POST " + entra_.token_url() +
                ": HTTP 401 Unauthorized: invalid_client: AADSTS700027: The certificate with "
                "identifier used to sign the client assertion is not registered on "
                "application.");
}

TEST_F(AzureEntraIdProviders, TheAuthorityHostDefaultsToEntraAndGetsHttpsWithoutAScheme) {
  unset("AZURE_AUTHORITY_HOST");
  EXPECT_EQ(authority_host(), "https://login.microsoftonline.com");
  EXPECT_EQ(token_url("t"), "https://login.microsoftonline.com/t/oauth2/v2.0/token");
  set("AZURE_AUTHORITY_HOST", "login.microsoftonline.us/");
  EXPECT_EQ(token_url("t"), "https://login.microsoftonline.us/t/oauth2/v2.0/token");

  // The server speaks plain HTTP: that the request went out over TLS shows in the failure.
  set("AZURE_AUTHORITY_HOST", entra_.host());
  set_client_secret();
  EnvironmentProvider provider(std::chrono::seconds(2));
  const auto failure = this->failure(provider);
  const std::string url = "https://" + entra_.host() + "/" + options().tenant + "/oauth2/v2.0/token";
  EXPECT_TRUE(failure.message.starts_with("Azure credentials from environment: POST " + url + ": "))
      << failure.message;
  EXPECT_TRUE(failure.configured);
  EXPECT_EQ(entra_.requests(Flow::client_secret), 0);
}

TEST_F(AzureEntraIdProviders, WorkloadIdentityExchangesTheFederatedToken) {
  set_workload_identity(federated_token + "\n");
  WorkloadIdentityProvider provider;
  const auto before = Clock::now();
  expect_last_token(run(provider.get()), before);
  EXPECT_EQ(entra_.requests(Flow::workload_identity), 1);
  auto form = tensorstream::testing::parse_pairs(entra_.requests().at(0).body, true);
  EXPECT_EQ(form["client_assertion"], federated_token);
  EXPECT_EQ(form["client_assertion_type"],
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer");
  EXPECT_EQ(form["scope"], "https://storage.azure.com/.default");

  // The file is read again on every call: Kubernetes rotates it.
  write("azure-identity-token", "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvdGhlciJ9.c2ln");
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Azure credentials from workload identity: POST " +
                                 entra_.token_url() +
                                 ": HTTP 401 Unauthorized: invalid_client: AADSTS70021: No "
                                 "matching federated identity record found for presented "
                                 "assertion.");
  EXPECT_TRUE(failure.configured);
}

TEST_F(AzureEntraIdProviders, WorkloadIdentityNeedsItsThreeVariablesAndAReadableFile) {
  WorkloadIdentityProvider provider;
  const auto absent = failure(provider);
  EXPECT_EQ(absent.message,
            "Azure credentials from workload identity: AZURE_FEDERATED_TOKEN_FILE is not set");
  EXPECT_FALSE(absent.configured);
  set("AZURE_FEDERATED_TOKEN_FILE", (home() / "token").string());
  set("AZURE_CLIENT_ID", options().client_id);
  EXPECT_EQ(failure(provider).message,
            "Azure credentials from workload identity: AZURE_TENANT_ID is not set");
  set("AZURE_TENANT_ID", options().tenant);
  const auto missing = failure(provider);
  EXPECT_EQ(missing.message, "Azure credentials from workload identity: " +
                                 (home() / "token").string() + ": No such file or directory");
  EXPECT_TRUE(missing.configured);
  write("token", " \n");
  EXPECT_EQ(failure(provider).message,
            "Azure credentials from workload identity: " + (home() / "token").string() +
                " is empty");
  EXPECT_TRUE(entra_.requests().empty());
}

TEST_F(AzureEntraIdProviders, ImdsIsAskedWithTheMetadataHeader) {
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", entra_.authority() + "/");
  ManagedIdentityProvider provider;
  const auto before = Clock::now();
  expect_last_token(run(provider.get()), before);
  const auto received = entra_.requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].method, "GET");
  EXPECT_EQ(received[0].target, imds_token_target);
  EXPECT_EQ(received[0].metadata, "true");
  EXPECT_EQ(entra_.requests(Flow::imds), 1);
}

TEST_F(AzureEntraIdProviders, AzureClientIdChoosesTheUserAssignedIdentity) {
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", entra_.host());
  set("AZURE_CLIENT_ID", options().user_assigned_client_id);
  ManagedIdentityProvider provider;
  const std::string token = run(provider.get()).secret;
  EXPECT_EQ(token, entra_.last_token());
  EXPECT_EQ(entra_.requests().at(0).target,
            std::string(imds_token_target) + "&client_id=" + options().user_assigned_client_id);

  set("AZURE_CLIENT_ID", "00000000-0000-0000-0000-000000000000");
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message, "Azure credentials from managed identity: GET " +
                                 entra_.authority() + std::string(imds_token_target) +
                                 "&client_id=00000000-0000-0000-0000-000000000000: HTTP 400 Bad "
                                 "Request: invalid_request: Identity not found");
  EXPECT_TRUE(failure.configured);
}

TEST_F(AzureEntraIdProviders, AppServiceEndpointIsAskedWithItsHeader) {
  set("IDENTITY_ENDPOINT", entra_.app_service_endpoint());
  set("IDENTITY_HEADER", options().identity_header);
  ManagedIdentityProvider provider;
  const Credentials credentials = run(provider.get());
  EXPECT_EQ(credentials.secret, entra_.last_token());
  // App Service says only when the token expires.
  EXPECT_EQ(credentials.expiration,
            Clock::time_point(std::chrono::seconds(entra_.last_expires_on())));
  const auto received = entra_.requests();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].target,
            "/msi/token?api-version=2019-08-01&resource=https%3A%2F%2Fstorage.azure.com%2F");
  EXPECT_EQ(received[0].identity_header, options().identity_header);

  set("IDENTITY_HEADER", "stale");
  const auto failure = this->failure(provider);
  EXPECT_EQ(failure.message,
            "Azure credentials from managed identity: GET " + entra_.app_service_endpoint() +
                "?api-version=2019-08-01&resource=https%3A%2F%2Fstorage.azure.com%2F: HTTP 401 "
                "Unauthorized: unauthorized: X-IDENTITY-HEADER is missing or wrong");
  EXPECT_TRUE(failure.configured);
}

TEST_F(AzureEntraIdProviders, ImdsThatDoesNotAnswerIsNotConfigured) {
  ManagedIdentityProvider provider(std::chrono::milliseconds(100));
  const auto failure = this->failure(provider);
  EXPECT_TRUE(failure.message.starts_with("Azure credentials from managed identity: GET "
                                          "http://169.254.169.254" +
                                          std::string(imds_token_target) + ": "))
      << failure.message;
  EXPECT_FALSE(failure.configured);
}

TEST_F(AzureEntraIdProviders, ChainPrefersTheEnvironmentThenWorkloadIdentityThenManagedIdentity) {
  set_client_secret();
  set("AZURE_FEDERATED_TOKEN_FILE", write("token", federated_token).string());
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", entra_.authority());
  // Expects a fresh chain to get the last token issued, by `flow`.
  const auto expect_chain_token_from = [this](Flow flow) {
    ChainProvider chain(entra_id_providers());
    const std::string token = run(chain.get()).secret;
    EXPECT_EQ(token, entra_.last_token());
    EXPECT_EQ(entra_.requests(flow), 1);
  };
  expect_chain_token_from(Flow::client_secret);
  unset("AZURE_CLIENT_SECRET");
  expect_chain_token_from(Flow::workload_identity);
  unset("AZURE_FEDERATED_TOKEN_FILE");
  // Managed identity takes AZURE_CLIENT_ID for its user-assigned identity.
  set("AZURE_CLIENT_ID", options().user_assigned_client_id);
  expect_chain_token_from(Flow::imds);
  EXPECT_EQ(entra_.requests().size(), 3u);
}

TEST_F(AzureEntraIdProviders, ABrokenEnvironmentStopsTheChain) {
  set_client_secret();
  set("AZURE_CLIENT_SECRET", "stale");
  set("AZURE_FEDERATED_TOKEN_FILE", write("token", federated_token).string());
  ChainProvider chain(entra_id_providers());
  const auto failure = this->failure(chain);
  EXPECT_TRUE(failure.message.starts_with("Azure credentials from environment: POST "))
      << failure.message;
  EXPECT_TRUE(failure.configured);
  EXPECT_EQ(entra_.requests(Flow::workload_identity), 0);
}

TEST_F(AzureEntraIdProviders, ChainWithoutCredentialsListsEverySource) {
  ChainProvider chain({std::make_shared<EnvironmentProvider>(),
                       std::make_shared<WorkloadIdentityProvider>(),
                       std::make_shared<ManagedIdentityProvider>(std::chrono::milliseconds(100))});
  const auto failure = this->failure(chain);
  EXPECT_TRUE(failure.message.starts_with(
      "Azure credentials from credential chain: no source has credentials (environment: "
      "AZURE_TENANT_ID is not set; workload identity: AZURE_FEDERATED_TOKEN_FILE is not set; "
      "managed identity: GET http://169.254.169.254" + std::string(imds_token_target) + ": "))
      << failure.message;
  EXPECT_FALSE(failure.configured);
}

TEST_F(AzureEntraIdProviders, ThirtyTwoCallersOfACacheMakeOneTokenRequest) {
  set_client_secret();
  std::atomic<Clock::time_point> now{Clock::now()};
  CachedProvider cached(std::make_shared<EnvironmentProvider>(), std::chrono::minutes(5),
                        [&now] { return now.load(); });
  // 32 calls at once on four threads; returns the tokens they got.
  const auto concurrently = [&cached] {
    boost::asio::io_context io;
    std::vector<std::future<Credentials>> calls;
    for (int i = 0; i < 32; ++i) {
      calls.push_back(boost::asio::co_spawn(io, cached.get(), boost::asio::use_future));
    }
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&io] { io.run(); });
    for (auto& thread : threads) thread.join();
    std::vector<std::string> tokens;
    for (auto& call : calls) tokens.push_back(call.get().secret);
    return tokens;
  };

  // Nothing cached: every caller waits for the one request and shares its token.
  for (const auto& token : concurrently()) EXPECT_EQ(token, entra_.last_token());
  EXPECT_EQ(entra_.requests(Flow::client_secret), 1);
  const std::string first = entra_.last_token();

  // About to expire: one caller refreshes, the others keep the old token meanwhile.
  now = Clock::now() + std::chrono::minutes(58);
  for (const auto& token : concurrently()) {
    EXPECT_TRUE(token == first || token == entra_.last_token()) << token;
  }
  EXPECT_EQ(entra_.requests(Flow::client_secret), 2);
  EXPECT_NE(entra_.last_token(), first);
}

TEST(AzureTokenResponse, LifetimesAreReadInEveryDialect) {
  const TokenRequester who{"Azure", "managed identity", true};
  const auto now = Clock::time_point(std::chrono::seconds(1699990000));
  const auto expiration = [&](std::string_view json) {
    return parse_token(json, now, "URL", who).expiration;
  };
  const auto on = Clock::time_point(std::chrono::seconds(1700000000));
  EXPECT_EQ(expiration(R"({"token_type":"Bearer","expires_in":3599,"access_token":"t"})"),
            now + std::chrono::seconds(3599));
  EXPECT_EQ(expiration(R"({"access_token":"t","expires_in":"3599","expires_on":"1700000000"})"),
            now + std::chrono::seconds(3599));
  EXPECT_EQ(expiration(R"({"access_token":"t","expires_on":"1700000000"})"), on);
  EXPECT_EQ(expiration(R"({"access_token":"t","expires_on":1700000000})"), on);
  const Credentials token = parse_token(R"({"access_token":"t","expires_in":1})", now, "URL", who);
  EXPECT_EQ(token.kind, Credentials::Kind::bearer);
  EXPECT_EQ(token.secret, "t");
}

TEST(AzureTokenResponse, MalformedAnswersAreReportedWithTheUrl) {
  const TokenRequester who{"Azure", "managed identity", true};
  const auto message = [&](std::string_view json) {
    try {
      parse_token(json, Clock::now(), "URL", who);
    } catch (const CredentialsError& error) {
      EXPECT_TRUE(error.configured());
      return std::string(error.what());
    }
    return std::string("no error");
  };
  const std::string prefix =
      "Azure credentials from managed identity: malformed token response from URL: ";
  EXPECT_EQ(message(R"({"token_type":"Bearer"})"),
            prefix + "access_token: The JSON field referenced does not exist in this object.");
  EXPECT_EQ(message(R"({"access_token":""})"), prefix + "access_token is empty");
  EXPECT_EQ(message(R"({"access_token":"t"})"),
            prefix + "neither expires_in nor expires_on says when the token expires");
  EXPECT_EQ(message(R"({"access_token":"t","expires_in":"soon"})"),
            prefix + "expires_in is not a whole number of seconds");
  EXPECT_EQ(message(R"({"access_token":"t","expires_in":"3599s"})"),
            prefix + "expires_in is not a whole number of seconds");
  EXPECT_EQ(message(R"({"access_token":"t","expires_on":"09/14/2017 00:00:00 PM +00:00"})"),
            prefix + "expires_on is not a whole number of seconds");
  EXPECT_EQ(message(R"({"access_token":"t","expires_in":-1})"),
            prefix + "expires_in -1 is outside [0, 31536000] seconds");
  EXPECT_EQ(message(R"({"access_token":"t","expires_in":"9223372036854775807"})"),
            prefix + "expires_in 9223372036854775807 is outside [0, 31536000] seconds");
  // Found by azure_fuzz: a time centuries away overflowed the clock's nanoseconds.
  EXPECT_EQ(message(R"({"access_token":"t","expires_on":"17650000000"})"),
            prefix + "expires_on 17650000000 is not a time within a year of now in epoch seconds");
  EXPECT_EQ(message(R"({"access_token":"t","expires_on":-1})"),
            prefix + "expires_on -1 is not a time within a year of now in epoch seconds");
  EXPECT_EQ(message("<html>"), prefix + "The JSON document has an improper structure: missing "
                                        "or superfluous commas, braces, missing keys, etc.");
}

}  // namespace tensorstream::azure::entra_id_tests
