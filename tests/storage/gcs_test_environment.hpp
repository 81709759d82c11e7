#pragma once
// A clean Google environment for one GCS test, restored afterwards; the tests' key and a fixed
// token provider.

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <string>
#include <utility>

#include "support/isolated_environment_test.hpp"
#include "support/rsa_key.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs::testing {

/// A token provider that always hands out the same token, without expiration.
class FixedToken : public TokenProvider {
 public:
  explicit FixedToken(std::string token) : token_(std::move(token)) {}
  std::string name() const override { return "fixed token"; }
  boost::asio::awaitable<AccessToken> get() override { co_return AccessToken{token_, {}}; }

 private:
  std::string token_;
};

/// Clears every variable the token providers and GcsStore read, points HOME at a fresh directory
/// (so the machine's own gcloud credentials stay out of the test) and turns the metadata server
/// off (so no test waits on 169.254.169.254); everything is restored afterwards.
class GcsEnvironmentTest : public tensorstream::testing::IsolatedEnvironmentTest {
 protected:
  GcsEnvironmentTest()
      : IsolatedEnvironmentTest({"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG",
                                 "GCE_METADATA_HOST", "STORAGE_EMULATOR_HOST", "NO_GCE_CHECK",
                                 "SSL_CERT_FILE"}) {
    set("NO_GCE_CHECK", "true");
  }

  /// The service account key of every test, made once (RSA key generation takes a while).
  static const tensorstream::testing::RsaKeyPair& key() {
    static const auto pair = tensorstream::testing::RsaKeyPair::generate();
    return pair;
  }
};

}  // namespace tensorstream::gcs::testing
