#pragma once
// A clean AWS environment for one credentials test, restored afterwards.

#include <gtest/gtest.h>

#include <string>

#include "support/isolated_environment_test.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/storage/s3/credentials_provider.hpp"

namespace tensorstream::s3::testing {

/// Clears every variable the credential providers, region resolution and S3Store read (and the
/// CA file the https tests trust), points HOME at a fresh directory, and turns off instance
/// metadata (so no test waits on 169.254.169.254); everything is restored afterwards.
class AwsEnvironmentTest : public tensorstream::testing::IsolatedEnvironmentTest {
 protected:
  AwsEnvironmentTest()
      : IsolatedEnvironmentTest({"AWS_ACCESS_KEY_ID",
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
                                 "SSL_CERT_FILE"}) {
    set("AWS_EC2_METADATA_DISABLED", "true");
  }

  /// The credentials `provider` loads.
  Credentials load(CredentialsProvider& provider) { return run(provider.get()); }
};

}  // namespace tensorstream::s3::testing
