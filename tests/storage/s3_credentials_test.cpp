// The providers that need no network (environment, shared files), region resolution, the chain
// and the cache.

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <deque>
#include <future>
#include <memory>
#include <string>

#include "s3_test_environment.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3/cached_provider.hpp"
#include "tensorstream/storage/s3/chain_provider.hpp"
#include "tensorstream/storage/s3/credentials_error.hpp"
#include "tensorstream/storage/s3/default_credentials.hpp"
#include "tensorstream/storage/s3/environment_provider.hpp"
#include "tensorstream/storage/s3/profile_provider.hpp"
#include "tensorstream/storage/s3/region.hpp"

namespace tensorstream::s3 {
namespace {

using namespace std::chrono_literals;
using Time = std::chrono::system_clock::time_point;

class S3Credentials : public testing::AwsEnvironmentTest {
 protected:
  std::string default_files() const {
    return (home() / ".aws/credentials").string() + " and " + (home() / ".aws/config").string();
  }
};

void expect_credentials(const Credentials& credentials, const std::string& id,
                        const std::string& secret, const std::string& token) {
  EXPECT_EQ(credentials.access_key_id, id);
  EXPECT_EQ(credentials.secret_access_key, secret);
  EXPECT_EQ(credentials.session_token, token);
  EXPECT_EQ(credentials.expiration, std::nullopt);
}

TEST_F(S3Credentials, EnvironmentReadsKeyPairAndSessionToken) {
  set("AWS_ACCESS_KEY_ID", "AKIDENV");
  set("AWS_SECRET_ACCESS_KEY", "secret/env+key");
  EnvironmentProvider provider;
  expect_credentials(load(provider), "AKIDENV", "secret/env+key", "");
  set("AWS_SESSION_TOKEN", "session-token");
  expect_credentials(load(provider), "AKIDENV", "secret/env+key", "session-token");
}

TEST_F(S3Credentials, EnvironmentWithoutKeysIsNotConfigured) {
  EnvironmentProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from environment: AWS_ACCESS_KEY_ID is not set");
  EXPECT_FALSE(result.configured);
}

TEST_F(S3Credentials, EnvironmentWithHalfAKeyPairIsAnError) {
  EnvironmentProvider provider;
  set("AWS_ACCESS_KEY_ID", "AKIDENV");
  auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from environment: AWS_ACCESS_KEY_ID is set but "
            "AWS_SECRET_ACCESS_KEY is not");
  EXPECT_TRUE(result.configured);
  unset("AWS_ACCESS_KEY_ID");
  set("AWS_SECRET_ACCESS_KEY", "secret");
  result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from environment: AWS_SECRET_ACCESS_KEY is set but "
            "AWS_ACCESS_KEY_ID is not");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3Credentials, ProfileDefaultFromHomeCredentialsFile) {
  write(".aws/credentials",
        "[default]\naws_access_key_id = AKIDFILE\naws_secret_access_key = filesecret\n"
        "aws_session_token = filetoken\n[other]\naws_access_key_id = NO\n"
        "aws_secret_access_key = NO\n");
  ProfileProvider provider;
  expect_credentials(load(provider), "AKIDFILE", "filesecret", "filetoken");
}

TEST_F(S3Credentials, ProfileNamedByAwsProfileFromConfigFile) {
  const auto config = write("elsewhere/config",
                            "[default]\naws_access_key_id = NO\naws_secret_access_key = NO\n"
                            "[profile dev]\naws_access_key_id = AKIDDEV\n"
                            "aws_secret_access_key = devsecret\n");
  // Without the "profile " prefix a config section is not the profile.
  write(".aws/config", "[dev]\naws_access_key_id = NO\naws_secret_access_key = NO\n");
  set("AWS_CONFIG_FILE", config.string());
  set("AWS_PROFILE", "dev");
  ProfileProvider provider;
  expect_credentials(load(provider), "AKIDDEV", "devsecret", "");
}

TEST_F(S3Credentials, ProfileCredentialsFileWinsOverConfigFile) {
  write(".aws/config",
        "[profile dev]\naws_access_key_id = AKIDCONFIG\n"
        "aws_secret_access_key = configsecret\naws_session_token = configtoken\n");
  write(".aws/credentials",
        "[dev]\naws_access_key_id = AKIDCREDS\n"
        "aws_secret_access_key = credssecret\n");
  set("AWS_PROFILE", "dev");
  ProfileProvider provider;
  // Keys are merged one by one: the token only the config file sets is kept.
  expect_credentials(load(provider), "AKIDCREDS", "credssecret", "configtoken");
}

TEST_F(S3Credentials, ProfileSharedCredentialsFileVariableReplacesHomeFile) {
  write(".aws/credentials", "[default]\naws_access_key_id = NO\naws_secret_access_key = NO\n");
  const auto file = write("x/creds",
                          "[default]\naws_access_key_id = AKIDX\n"
                          "aws_secret_access_key = xsecret\n");
  set("AWS_SHARED_CREDENTIALS_FILE", file.string());
  ProfileProvider provider;
  expect_credentials(load(provider), "AKIDX", "xsecret", "");
}

TEST_F(S3Credentials, ProfileMissingDefaultIsNotConfigured) {
  ProfileProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from shared files: profile 'default' not found in " + default_files());
  EXPECT_FALSE(result.configured);
}

TEST_F(S3Credentials, ProfileMissingNamedProfileIsAnError) {
  write(".aws/credentials", "[default]\naws_access_key_id = A\naws_secret_access_key = B\n");
  set("AWS_PROFILE", "prod");
  ProfileProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from shared files: profile 'prod' not found in " + default_files());
  EXPECT_TRUE(result.configured);
}

TEST_F(S3Credentials, ProfileWithoutKeysIsNotConfigured) {
  write(".aws/config", "[default]\nregion = eu-west-1\n");
  ProfileProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from shared files: profile 'default' in " +
                                default_files() + " has no aws_access_key_id");
  EXPECT_FALSE(result.configured);
}

TEST_F(S3Credentials, ProfileMalformedFileIsAnErrorNamingFileAndLine) {
  const auto file = write(".aws/credentials", "[default]\naws_access_key_id\n");
  ProfileProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from shared files: " + file.string() +
                                ":2: expected \"key = value\", got \"aws_access_key_id\"");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3Credentials, ProfileWithHalfAKeyPairIsAnError) {
  write(".aws/credentials", "[default]\naws_access_key_id = AKID\n");
  ProfileProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message, "AWS credentials from shared files: profile 'default' in " +
                                default_files() +
                                " has aws_access_key_id but no aws_secret_access_key");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3Credentials, ProfileWithRoleArnIsReportedAsUnsupported) {
  write(".aws/config", "[profile ci]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = x\n");
  set("AWS_PROFILE", "ci");
  ProfileProvider provider;
  const auto result = failure(provider);
  EXPECT_EQ(result.message,
            "AWS credentials from shared files: profile 'ci' uses role_arn, "
            "which tensorstream does not support");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3Credentials, RegionResolutionOrder) {
  EXPECT_EQ(resolve_region(), "us-east-1");
  write(".aws/config", "[default]\nregion = eu-north-1\n[profile dev]\nregion = ap-south-1\n");
  EXPECT_EQ(resolve_region(), "eu-north-1");
  set("AWS_PROFILE", "dev");
  EXPECT_EQ(resolve_region(), "ap-south-1");
  set("AWS_DEFAULT_REGION", "us-west-2");
  EXPECT_EQ(resolve_region(), "us-west-2");
  set("AWS_REGION", "eu-central-1");
  EXPECT_EQ(resolve_region(), "eu-central-1");
}

TEST_F(S3Credentials, RegionFromMalformedConfigThrows) {
  const auto file = write(".aws/config", "region = eu-north-1\n");
  try {
    resolve_region();
    FAIL() << "no exception";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              file.string() + ":1: setting \"region\" outside of any [section]");
  }
}

TEST_F(S3Credentials, ChainPrefersEnvironmentOverSharedFiles) {
  write(".aws/credentials",
        "[default]\naws_access_key_id = AKIDFILE\n"
        "aws_secret_access_key = filesecret\n");
  set("AWS_ACCESS_KEY_ID", "AKIDENV");
  set("AWS_SECRET_ACCESS_KEY", "envsecret");
  auto provider = default_credentials_provider();
  expect_credentials(load(*provider), "AKIDENV", "envsecret", "");
}

TEST_F(S3Credentials, ChainFallsBackToSharedFiles) {
  write(".aws/credentials",
        "[default]\naws_access_key_id = AKIDFILE\n"
        "aws_secret_access_key = filesecret\n");
  auto provider = default_credentials_provider();
  expect_credentials(load(*provider), "AKIDFILE", "filesecret", "");
}

TEST_F(S3Credentials, ChainStopsAtABrokenSource) {
  write(".aws/credentials",
        "[default]\naws_access_key_id = AKIDFILE\n"
        "aws_secret_access_key = filesecret\n");
  set("AWS_SECRET_ACCESS_KEY", "envsecret");
  auto provider = default_credentials_provider();
  const auto result = failure(*provider);
  EXPECT_EQ(result.message,
            "AWS credentials from environment: AWS_SECRET_ACCESS_KEY is set but "
            "AWS_ACCESS_KEY_ID is not");
  EXPECT_TRUE(result.configured);
}

TEST_F(S3Credentials, ChainWithoutCredentialsNamesEveryProviderAndCause) {
  auto provider = default_credentials_provider();
  const auto result = failure(*provider);
  EXPECT_EQ(result.message,
            "AWS credentials from credential chain: no provider has credentials ("
            "environment: AWS_ACCESS_KEY_ID is not set; "
            "shared files: profile 'default' not found in " +
                default_files() +
                "; "
                "web identity: AWS_WEB_IDENTITY_TOKEN_FILE is not set; "
                "container endpoint: AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and "
                "AWS_CONTAINER_CREDENTIALS_FULL_URI are not set; "
                "EC2 instance metadata: disabled by AWS_EC2_METADATA_DISABLED=true)");
  EXPECT_FALSE(result.configured);
}

// Hands out scripted results, counting the loads.
class ScriptedProvider : public CredentialsProvider {
 public:
  std::string name() const override { return "scripted"; }

  boost::asio::awaitable<Credentials> load() override {
    ++loads;
    if (script.empty()) throw CredentialsError("scripted", "endpoint down", true);
    auto credentials = script.front();
    script.pop_front();
    co_return credentials;
  }

  std::deque<Credentials> script;
  int loads = 0;
};

const Time start = std::chrono::sys_days{std::chrono::year{2026} / 11 / 29} + 12h;

Credentials expiring(const std::string& id, Time expiration) {
  return {id, "secret-" + id, "token-" + id, expiration};
}

class S3CachedProvider : public S3Credentials {
 protected:
  std::shared_ptr<ScriptedProvider> inner = std::make_shared<ScriptedProvider>();
  Time now = start;
  CachedProvider cached{inner, 5min, [this] { return now; }};
};

TEST_F(S3CachedProvider, KeepsCredentialsWithoutExpiration) {
  inner->script = {{"AKID1", "s1", "", std::nullopt}};
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  now += 1000h;
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  EXPECT_EQ(inner->loads, 1);
}

TEST_F(S3CachedProvider, RefreshesWhenWithinTheMarginOfExpiration) {
  inner->script = {expiring("AKID1", start + 10min), expiring("AKID2", start + 70min)};
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  now = start + 4min + 59s;
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  EXPECT_EQ(inner->loads, 1);
  now = start + 5min;
  const auto refreshed = load(cached);
  EXPECT_EQ(refreshed.access_key_id, "AKID2");
  EXPECT_EQ(refreshed.session_token, "token-AKID2");
  EXPECT_EQ(refreshed.expiration, start + 70min);
  EXPECT_EQ(inner->loads, 2);
  now = start + 60min;
  EXPECT_EQ(load(cached).access_key_id, "AKID2");
  EXPECT_EQ(inner->loads, 2);
}

TEST_F(S3CachedProvider, KeepsValidCredentialsWhenARefreshFails) {
  inner->script = {expiring("AKID1", start + 10min)};
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  now = start + 6min;
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  EXPECT_EQ(inner->loads, 2);
  now = start + 10min;
  const auto result = failure(cached);
  EXPECT_EQ(result.message, "AWS credentials from scripted: endpoint down");
  EXPECT_EQ(inner->loads, 3);
}

// Loads only when the test opens the gate, so that a refresh can be caught in the middle.
class GatedProvider : public CredentialsProvider {
 public:
  explicit GatedProvider(boost::asio::io_context& io)
      : gate(io, boost::asio::steady_timer::time_point::max()) {}

  std::string name() const override { return "gated"; }

  boost::asio::awaitable<Credentials> load() override {
    ++loads;
    // The test opens the gate by cancelling the wait.
    co_await gate.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
    co_return expiring("AKID" + std::to_string(loads), start + 70min);
  }

  boost::asio::steady_timer gate;
  int loads = 0;
};

TEST_F(S3CachedProvider, OneRefreshAtATimeWhileTheOldCredentialsAreValid) {
  boost::asio::io_context io;
  auto gated = std::make_shared<GatedProvider>(io);
  Time clock = start;
  CachedProvider cached(gated, 5min, [&] { return clock; });
  // Runs what is ready; restart() because the io_context stops whenever it runs out of work.
  const auto settle = [&] {
    io.restart();
    io.poll();
  };
  auto first = boost::asio::co_spawn(io, cached.load(), boost::asio::use_future);
  settle();
  gated->gate.cancel();
  settle();
  ASSERT_EQ(first.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(first.get().access_key_id, "AKID1");

  clock = start + 66min;  // Within the margin of AKID1's expiration at start + 70 min.
  auto refreshing = boost::asio::co_spawn(io, cached.load(), boost::asio::use_future);
  settle();
  auto concurrent = boost::asio::co_spawn(io, cached.load(), boost::asio::use_future);
  settle();
  ASSERT_EQ(concurrent.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(concurrent.get().access_key_id, "AKID1");
  EXPECT_EQ(gated->loads, 2);
  gated->gate.cancel();
  settle();
  ASSERT_EQ(refreshing.wait_for(0s), std::future_status::ready);
  EXPECT_EQ(refreshing.get().access_key_id, "AKID2");
  EXPECT_EQ(gated->loads, 2);
}

TEST_F(S3CachedProvider, DoesNotCacheFailures) {
  EXPECT_EQ(failure(cached).message, "AWS credentials from scripted: endpoint down");
  inner->script = {expiring("AKID1", start + 10min)};
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  EXPECT_EQ(cached.name(), "scripted");
}

}  // namespace
}  // namespace tensorstream::s3
