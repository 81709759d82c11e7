#pragma once
// Tests against one Azurite per suite (it takes a second or two to start), each test with a
// container of its own, in an environment cleared of every variable the Azure backend reads.

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "support/azurite_server.hpp"
#include "support/isolated_environment_test.hpp"
#include "support/skip.hpp"

namespace tensorstream::azure::testing {

/// Clears the variables AzureStore and its credential chain read, and starts Azurite once per
/// suite. container() is a fresh container of the test's, created by SetUp().
class AzuriteTest : public tensorstream::testing::IsolatedEnvironmentTest {
 protected:
  AzuriteTest()
      : IsolatedEnvironmentTest(
            {"AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_ACCOUNT", "AZURE_STORAGE_KEY",
             "AZURE_STORAGE_SAS_TOKEN", "AZURE_TENANT_ID", "AZURE_CLIENT_ID",
             "AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH",
             "AZURE_CLIENT_CERTIFICATE_PASSWORD", "AZURE_FEDERATED_TOKEN_FILE",
             "AZURE_AUTHORITY_HOST", "IDENTITY_ENDPOINT", "IDENTITY_HEADER",
             "AZURE_POD_IDENTITY_AUTHORITY_HOST"}) {}

  static void SetUpTestSuite() { start({}); }

  /// Starts the suite's Azurite with `options`, for a suite that needs other ones: its
  /// SetUpTestSuite calls this.
  static void start(const tensorstream::testing::AzuriteServer::Options& options) {
    if (!tensorstream::testing::AzuriteServer::unavailable(options)) {
      azurite_ = new tensorstream::testing::AzuriteServer(options);
    }
  }

  static void TearDownTestSuite() {
    delete azurite_;
    azurite_ = nullptr;
  }

  void SetUp() override {
    if (auto why = tensorstream::testing::AzuriteServer::unavailable()) {
      TENSORSTREAM_SKIP_UNLESS_CI(*why);
    }
    ASSERT_NE(azurite_, nullptr);
    container_ = "test-" + std::to_string(++containers_);
    azurite_->create_container(container_);
  }

  /// The suite's Azurite.
  static tensorstream::testing::AzuriteServer& azurite() { return *azurite_; }

  /// The test's container.
  const std::string& container() const { return container_; }

 private:
  static inline tensorstream::testing::AzuriteServer* azurite_ = nullptr;
  // Containers outlive their tests in the suite's Azurite: each test names a new one.
  static inline int containers_ = 0;
  std::string container_;
};

}  // namespace tensorstream::azure::testing
