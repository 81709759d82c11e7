#pragma once
// A clean AWS environment for one credentials test, restored afterwards.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/s3/credentials_error.hpp"
#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3::testing {

/// Every variable the credential providers and region resolution read, and the CA file the
/// https tests trust.
inline constexpr const char* aws_variables[] = {"AWS_ACCESS_KEY_ID",
                                                "AWS_SECRET_ACCESS_KEY",
                                                "AWS_SESSION_TOKEN",
                                                "AWS_PROFILE",
                                                "AWS_SHARED_CREDENTIALS_FILE",
                                                "AWS_CONFIG_FILE",
                                                "AWS_REGION",
                                                "AWS_DEFAULT_REGION",
                                                "AWS_WEB_IDENTITY_TOKEN_FILE",
                                                "AWS_ROLE_ARN",
                                                "AWS_ROLE_SESSION_NAME",
                                                "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                                                "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                                                "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                                                "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
                                                "AWS_EC2_METADATA_SERVICE_ENDPOINT",
                                                "AWS_EC2_METADATA_DISABLED",
                                                "AWS_ENDPOINT_URL_STS",
                                                "AWS_ENDPOINT_URL",
                                                "AWS_ENDPOINT_URL_S3",
                                                "AWS_CA_BUNDLE",
                                                "HOME",
                                                "SSL_CERT_FILE"};

/// Saves the AWS variables and HOME, clears them, points HOME at a fresh directory (so the
/// machine's own ~/.aws stays out of the test) and turns off instance metadata (so no test
/// waits on 169.254.169.254); the destructor restores everything.
class AwsEnvironmentTest : public ::testing::Test {
 protected:
  AwsEnvironmentTest() {
    for (const char* name : aws_variables) {
      if (const char* value = getenv(name)) saved_[name] = value;
      unsetenv(name);
    }
    set("HOME", home().string());
    set("AWS_EC2_METADATA_DISABLED", "true");
  }

  ~AwsEnvironmentTest() override {
    for (const char* name : aws_variables) {
      const auto found = saved_.find(name);
      if (found == saved_.end()) {
        unsetenv(name);
      } else {
        setenv(name, found->second.c_str(), 1);
      }
    }
  }

  static void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }
  static void unset(const char* name) { unsetenv(name); }

  /// The test's HOME.
  const std::filesystem::path& home() const { return home_.path(); }

  /// Writes `text` to `path` (relative to HOME), creating directories; returns the full path.
  std::filesystem::path write(const std::string& path, const std::string& text) const {
    const auto full = home() / path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }

  /// Runs `task` to completion on a fresh io_context; rethrows what it threw.
  template <class T>
  static T run(boost::asio::awaitable<T> task) {
    return tensorstream::testing::run_task(std::move(task));
  }

  /// What a failing load() threw.
  struct Failure {
    std::string message;
    bool configured = false;
  };

  /// The credentials `provider` loads.
  Credentials load(CredentialsProvider& provider) { return run(provider.load()); }

  /// The error `provider` fails with (and a test failure if it loads credentials instead).
  Failure failure(CredentialsProvider& provider) {
    try {
      const auto credentials = run(provider.load());
      ADD_FAILURE() << "loaded credentials " << credentials.access_key_id;
    } catch (const CredentialsError& error) {
      return {error.what(), error.configured()};
    }
    return {};
  }

 private:
  std::map<std::string, std::string> saved_;
  tensorstream::testing::TempDir home_;
};

}  // namespace tensorstream::s3::testing
