// --profile: the AWS profile whose keys sign s3:// requests, as with the AWS CLI.

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "storage/s3rver_test.hpp"
#include "support/files.hpp"
#include "support/process.hpp"
#include "support/signature_verifier.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

using testing::run_cli;
using testing::S3rverServer;
using testing::SignatureVerifier;

// s3rver behind a proxy that checks every signature against the one key pair s3rver has, which
// only the profile "work" of the shared credentials file holds; the environment's keys are wrong.
class ProfileCli : public s3::testing::S3rverTest {
 protected:
  void SetUp() override {
    S3rverTest::SetUp();
    if (IsSkipped()) return;
    if (auto why = SignatureVerifier::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
    verifier_ = std::make_unique<SignatureVerifier>(
        s3rver_->port(), std::vector<std::pair<std::string, std::string>>{
                             {S3rverServer::access_key_id, S3rverServer::secret_access_key}});
    set("AWS_ENDPOINT_URL", verifier_->endpoint());
    set("AWS_ACCESS_KEY_ID", "AKIAWRONGWRONGWRONG1");
    set("AWS_SECRET_ACCESS_KEY", "not-the-secret");
    write(".aws/credentials", "[work]\naws_access_key_id = " +
                                  std::string(S3rverServer::access_key_id) +
                                  "\naws_secret_access_key = " +
                                  std::string(S3rverServer::secret_access_key) + "\n");
    testing::TempDir upload;
    const auto file = upload.path() / "object";
    testing::write_file(file, "12345");
    s3rver_->put("models", "weights/a.bin", file);
  }

  std::unique_ptr<SignatureVerifier> verifier_;
};

TEST_F(ProfileCli, TheProfilesKeysSignTheRequestsOverTheEnvironments) {
  const auto with_profile = run_cli({"ls", "s3://models/weights/", "--profile", "work"});
  EXPECT_EQ(with_profile.exit_code, 0) << with_profile.err;
  EXPECT_EQ(with_profile.out, "           5  s3://models/weights/a.bin\n1 object, 5 B\n");
  EXPECT_EQ(verifier_->counts().rejected, 0) << verifier_->log();

  // Without it the environment's keys sign, and S3 refuses them.
  const auto without = run_cli({"ls", "s3://models/weights/"});
  EXPECT_EQ(without.exit_code, 1);
  EXPECT_NE(without.err.find("SignatureDoesNotMatch"), std::string::npos) << without.err;
}

TEST_F(ProfileCli, AProfileThatDoesNotExistIsNamedWithTheFilesLookedAt) {
  const auto result = run_cli({"ls", "s3://models/weights/", "--profile", "nothere"});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.err.find("profile 'nothere' not found in " + home().string() +
                            "/.aws/credentials"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(verifier_->counts().verified, 0);
}

}  // namespace
}  // namespace tensorstream
