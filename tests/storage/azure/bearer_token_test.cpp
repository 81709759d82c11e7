// Entra ID tokens reaching the blob requests: AzureStore's default chain gets a token from the
// fixture token server (client secret, workload identity, managed identity) and reads from
// Azurite over https, which accepts only valid bearer tokens there (`--oauth basic`).

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/azure_token_server.hpp"
#include "support/azurite_server.hpp"
#include "support/isolated_environment_test.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/skip.hpp"
#include "tensorstream/storage/azure_store.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::azure_bearer_tests {

using testing::AzureTokenServer;
using testing::AzuriteServer;
using Flow = AzureTokenServer::Flow;

const std::string federated_token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2EifQ.c2ln";

class AzureBearerTokens : public testing::IsolatedEnvironmentTest {
 protected:
  AzureBearerTokens()
      : IsolatedEnvironmentTest({"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT",
                                 "AZURE_STORAGE_KEY", "AZURE_STORAGE_SAS_TOKEN",
                                 "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET",
                                 "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE",
                                 "AZURE_AUTHORITY_HOST", "AZURE_POD_IDENTITY_AUTHORITY_HOST",
                                 "IDENTITY_ENDPOINT", "IDENTITY_HEADER"}) {}

  void SetUp() override {
    if (auto why = AzuriteServer::unavailable({.https = true})) TENSORSTREAM_SKIP_UNLESS_CI(*why);
    azurite_ = std::make_unique<AzuriteServer>(AzuriteServer::Options{.https = true});
    azurite_->create_container("models");
    azurite_->put_blob("models", "m.bin", content_);
    set("AZURE_AUTHORITY_HOST", "http://127.0.0.1:9");
  }

  void start_entra(int token_lifetime = 3600) {
    entra_ = std::make_unique<AzureTokenServer>(AzureTokenServer::Options{
        .federated_token = federated_token, .token_lifetime = token_lifetime});
    set("AZURE_AUTHORITY_HOST", entra_->authority());
  }

  AzureStore store() {
    HttpOptions http;
    http.ca_file = azurite_->ca_file().string();
    AzureOptions options;
    options.endpoint = azurite_->blob_endpoint();
    return AzureStore(io_.get_executor(), Url::parse("az://models/"), http, options);
  }

  std::string read(AzureStore& azure) {
    return testing::read_string(io_, azure, "/m.bin", 0, content_.size());
  }

  const std::string content_ = testing::random_bytes(100'000, 9);
  boost::asio::io_context io_;
  std::unique_ptr<AzuriteServer> azurite_;
  std::unique_ptr<AzureTokenServer> entra_;
};

TEST_F(AzureBearerTokens, AClientSecretsTokenReadsTheBlob) {
  start_entra();
  set("AZURE_TENANT_ID", AzureTokenServer::Options{}.tenant);
  set("AZURE_CLIENT_ID", AzureTokenServer::Options{}.client_id);
  set("AZURE_CLIENT_SECRET", AzureTokenServer::Options{}.client_secret);
  auto azure = store();
  EXPECT_EQ(read(azure), content_);
  EXPECT_EQ(read(azure), content_);
  EXPECT_EQ(entra_->requests(Flow::client_secret), 1);
}

TEST_F(AzureBearerTokens, AWorkloadIdentitysTokenReadsTheBlob) {
  start_entra();
  set("AZURE_TENANT_ID", AzureTokenServer::Options{}.tenant);
  set("AZURE_CLIENT_ID", AzureTokenServer::Options{}.client_id);
  set("AZURE_FEDERATED_TOKEN_FILE", write("token", federated_token).string());
  auto azure = store();
  EXPECT_EQ(read(azure), content_);
  EXPECT_EQ(entra_->requests(Flow::workload_identity), 1);
}

TEST_F(AzureBearerTokens, AManagedIdentitysTokenReadsTheBlob) {
  start_entra();
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", entra_->authority());
  auto azure = store();
  EXPECT_EQ(read(azure), content_);
  EXPECT_EQ(entra_->requests(Flow::imds), 1);
}

TEST_F(AzureBearerTokens, AManagedIdentityThatDoesNotAnswerEndsTheChain) {
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", "http://127.0.0.1:9");
  auto azure = store();
  try {
    read(azure);
    FAIL() << "expected CredentialsError";
  } catch (const CredentialsError& error) {
    EXPECT_EQ(error.provider(), "managed identity") << error.what();
  }
}

TEST_F(AzureBearerTokens, AnExpiringTokenIsRefreshedOnceUnderThirtyTwoConcurrentReads) {
  // Refreshed half way through its life (a lifetime under ten minutes), so after 2 s.
  start_entra(4);
  set("AZURE_POD_IDENTITY_AUTHORITY_HOST", entra_->authority());
  auto azure = store();
  EXPECT_EQ(read(azure), content_);
  const std::string first = entra_->last_token();
  std::this_thread::sleep_for(std::chrono::milliseconds(2200));
  std::vector<std::string> reads(32, std::string(content_.size(), '\0'));
  std::vector<std::future<void>> done;
  for (auto& bytes : reads) {
    done.push_back(boost::asio::co_spawn(
        io_, azure.read_range("/m.bin", 0, std::as_writable_bytes(std::span(bytes))),
        boost::asio::use_future));
  }
  io_.restart();
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) threads.emplace_back([this] { io_.run(); });
  for (auto& thread : threads) thread.join();
  for (auto& read : done) read.get();
  for (const auto& bytes : reads) EXPECT_EQ(bytes, content_);
  EXPECT_EQ(entra_->requests(Flow::imds), 2);
  EXPECT_NE(entra_->last_token(), first);
}

}  // namespace tensorstream::azure_bearer_tests
