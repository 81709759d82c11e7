#pragma once
// A clean Google environment for one GCS test, restored afterwards; the tests' key and a fixed
// token provider.

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "support/rsa_key.hpp"
#include "support/run_task.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/gcs/credentials_error.hpp"
#include "tensorstream/storage/gcs/token_provider.hpp"

namespace tensorstream::gcs::testing {

/// A token provider that always hands out the same token, without expiration.
class FixedToken : public TokenProvider {
 public:
  explicit FixedToken(std::string token) : token_(std::move(token)) {}
  std::string name() const override { return "fixed token"; }
  boost::asio::awaitable<AccessToken> token() override { co_return AccessToken{token_, {}}; }

 private:
  std::string token_;
};

/// Clears every variable the token providers and GcsStore read, points HOME at a fresh directory
/// (so the machine's own gcloud credentials stay out of the test) and turns the metadata server
/// off (so no test waits on 169.254.169.254); everything is restored afterwards.
class GcsEnvironmentTest : public ::testing::Test {
 protected:
  GcsEnvironmentTest()
      : environment_({"GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "GCE_METADATA_HOST",
                      "STORAGE_EMULATOR_HOST", "NO_GCE_CHECK", "SSL_CERT_FILE"}) {
    set("HOME", home().string());
    set("NO_GCE_CHECK", "true");
  }

  void set(const std::string& name, const std::string& value) { environment_.set(name, value); }
  void unset(const std::string& name) { environment_.unset(name); }

  /// The test's HOME.
  const std::filesystem::path& home() const { return home_.path(); }

  /// Writes `text` to `path` (relative to HOME), creating directories; returns the full path.
  std::filesystem::path write(const std::string& path, const std::string& text) const {
    const auto full = home() / path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }

  /// The service account key of every test, made once (RSA key generation takes a while).
  static const tensorstream::testing::RsaKeyPair& key() {
    static const auto pair = tensorstream::testing::RsaKeyPair::generate();
    return pair;
  }

  /// Runs `task` to completion on a fresh io_context; rethrows what it threw.
  template <class T>
  static T run(boost::asio::awaitable<T> task) {
    return tensorstream::testing::run_task(std::move(task));
  }

  /// What a failing token() threw.
  struct Failure {
    std::string message;
    bool configured = false;
  };

  /// The error `provider` fails with (and a test failure if it gets a token instead).
  static Failure failure(TokenProvider& provider) {
    try {
      run(provider.token());
      ADD_FAILURE() << "got a token from " << provider.name();
    } catch (const CredentialsError& error) {
      return {error.what(), error.configured()};
    }
    return {};
  }

 private:
  tensorstream::testing::TempDir home_;
  tensorstream::testing::ScopedEnvironment environment_;
};

}  // namespace tensorstream::gcs::testing
