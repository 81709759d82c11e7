#pragma once
// Tests against s3rver: a clean AWS environment pointed at a fresh server.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "storage/s3_test_environment.hpp"
#include "support/s3rver_server.hpp"
#include "support/skip.hpp"

namespace tensorstream::s3::testing {

/// An AwsEnvironmentTest with s3rver running and its bucket "models" created; the environment
/// gives s3rver's credentials and endpoint to the default chain. Skips where s3rver cannot run.
class S3rverTest : public AwsEnvironmentTest {
 protected:
  void SetUp() override {
    if (auto why = tensorstream::testing::S3rverServer::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
    s3rver_ = std::make_unique<tensorstream::testing::S3rverServer>(
        std::vector<std::string>{"models"});
    set("AWS_ACCESS_KEY_ID", tensorstream::testing::S3rverServer::access_key_id);
    set("AWS_SECRET_ACCESS_KEY", tensorstream::testing::S3rverServer::secret_access_key);
    set("AWS_ENDPOINT_URL", s3rver_->endpoint());
  }

  std::unique_ptr<tensorstream::testing::S3rverServer> s3rver_;
};

}  // namespace tensorstream::s3::testing
