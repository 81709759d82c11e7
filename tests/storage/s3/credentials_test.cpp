// The providers that need no network (environment, shared files), region resolution, the chain
// and the cache.

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/s3_test_environment.hpp"
#include "support/logged_messages.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3/cached_provider.hpp"
#include "tensorstream/storage/s3/chain_provider.hpp"
#include "tensorstream/storage/credentials_error.hpp"
#include "tensorstream/storage/s3/default_credentials.hpp"
#include "storage/s3/environment_provider.hpp"
#include "storage/s3/profile_provider.hpp"
#include "storage/s3/region.hpp"

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

  boost::asio::awaitable<Credentials> get() override {
    ++loads;
    if (script.empty()) throw CredentialsError("AWS", "scripted", "endpoint down", true);
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

TEST_F(S3CachedProvider, ShortLivedCredentialsAreRefreshedHalfWayThroughTheirLifetime) {
  inner->script = {expiring("AKID1", start + 200s), expiring("AKID2", start + 1h)};
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  now = start + 99s;
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  now = start + 100s;
  EXPECT_EQ(load(cached).access_key_id, "AKID2");
  EXPECT_EQ(inner->loads, 2);
}

TEST_F(S3CachedProvider, KeepsValidCredentialsWhenARefreshFails) {
  tensorstream::testing::LoggedMessages warnings(LogLevel::warning);
  inner->script = {expiring("AKID1", start + 10min)};
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  now = start + 6min;
  EXPECT_EQ(load(cached).access_key_id, "AKID1");
  EXPECT_EQ(inner->loads, 2);
  EXPECT_EQ(warnings.messages(),
            std::vector<std::string>{"keeping AWS credentials that expire soon, refreshing them "
                                     "failed: AWS credentials from scripted: endpoint down"});
  now = start + 10min;
  const auto result = failure(cached);
  EXPECT_EQ(result.message, "AWS credentials from scripted: endpoint down");
  EXPECT_EQ(inner->loads, 3);
}

// Loads only when the test opens the gate, so that a refresh can be caught in the middle; a
// load whose caller is cancelled while it waits throws operation_aborted.
class GatedProvider : public CredentialsProvider {
 public:
  explicit GatedProvider(boost::asio::io_context& io)
      : gate_(io, boost::asio::steady_timer::time_point::max()) {}

  std::string name() const override { return "gated"; }

  boost::asio::awaitable<Credentials> get() override {
    const int load = ++loads;
    const int round = opened_;
    while (opened_ == round) {
      (void)co_await gate_.async_wait(boost::asio::as_tuple(boost::asio::use_awaitable));
      if (opened_ == round) {
        throw boost::system::system_error(boost::asio::error::operation_aborted);
      }
    }
    if (fail) throw CredentialsError("AWS", "gated", "endpoint down", true);
    co_return expiring("AKID" + std::to_string(load), start + 70min);
  }

  /// Lets the loads waiting now go on.
  void open() {
    ++opened_;
    gate_.cancel();
  }

  int loads = 0;
  bool fail = false;

 private:
  boost::asio::steady_timer gate_;
  int opened_ = 0;
};

// Concurrent calls on one io_context, run step by step.
class S3CachedProviderConcurrency : public S3CachedProvider {
 protected:
  // What a call returned (its access key id), or the message of what it threw.
  using Outcome = std::optional<std::string>;

  // Starts a call whose outcome lands in outcomes[index], cancellable by `cancel`.
  void call(std::size_t index, boost::asio::cancellation_signal* cancel = nullptr) {
    outcomes.resize(std::max(outcomes.size(), index + 1));
    auto done = [this, index](std::exception_ptr error, Credentials credentials) {
      if (!error) {
        outcomes[index] = credentials.access_key_id;
        return;
      }
      try {
        std::rethrow_exception(error);
      } catch (const boost::system::system_error& e) {
        outcomes[index] = e.code().message();
      } catch (const std::exception& e) {
        outcomes[index] = e.what();
      }
    };
    if (cancel != nullptr) {
      boost::asio::co_spawn(io, gated_cache.get(),
                            boost::asio::bind_cancellation_slot(cancel->slot(), done));
    } else {
      boost::asio::co_spawn(io, gated_cache.get(), done);
    }
  }

  // Runs what is ready; restart() because the io_context stops whenever it runs out of work.
  void settle() {
    io.restart();
    io.poll();
  }

  // Loads AKID1, which expires at start + 70 min, into the cache.
  void load_first() {
    call(0);
    settle();
    gated->open();
    settle();
    ASSERT_EQ(outcomes[0], "AKID1");
    outcomes.clear();
  }

  boost::asio::io_context io;
  std::shared_ptr<GatedProvider> gated = std::make_shared<GatedProvider>(io);
  Time clock = start;
  CachedProvider gated_cache{gated, 5min, [this] { return clock; }};
  std::vector<Outcome> outcomes;
};

TEST_F(S3CachedProviderConcurrency, OneRefreshAtATimeWhileTheOldCredentialsAreValid) {
  load_first();
  clock = start + 66min;  // Within the margin of AKID1's expiration at start + 70 min.
  call(0);
  settle();
  call(1);
  settle();
  EXPECT_EQ(outcomes[1], "AKID1");
  EXPECT_EQ(gated->loads, 2);
  gated->open();
  settle();
  EXPECT_EQ(outcomes[0], "AKID2");
  EXPECT_EQ(gated->loads, 2);
}

// Once credentials have expired, the requests a stream has in flight all need new ones at once:
// one STS or instance metadata request must serve them all.
TEST_F(S3CachedProviderConcurrency, CallersAfterExpiryShareOneRefresh) {
  load_first();
  clock = start + 71min;
  constexpr std::size_t callers = 32;
  for (std::size_t i = 0; i < callers; ++i) call(i);
  settle();
  EXPECT_EQ(gated->loads, 2);
  EXPECT_EQ(outcomes, std::vector<Outcome>(callers)) << "returned before the refresh ended";
  gated->open();
  settle();
  EXPECT_EQ(outcomes, std::vector<Outcome>(callers, "AKID2"));
  EXPECT_EQ(gated->loads, 2);
}

TEST_F(S3CachedProviderConcurrency, CallersAfterExpiryShareTheRefreshError) {
  load_first();
  clock = start + 71min;
  gated->fail = true;
  constexpr std::size_t callers = 32;
  for (std::size_t i = 0; i < callers; ++i) call(i);
  settle();
  gated->open();
  settle();
  EXPECT_EQ(outcomes,
            std::vector<Outcome>(callers, "AWS credentials from gated: endpoint down"));
  EXPECT_EQ(gated->loads, 2);
}

TEST_F(S3CachedProviderConcurrency, CancelledRefreshIsTakenOverByAWaiter) {
  load_first();
  clock = start + 71min;
  boost::asio::cancellation_signal cancel;
  call(0, &cancel);
  call(1);
  call(2);
  settle();
  EXPECT_EQ(gated->loads, 2);
  cancel.emit(boost::asio::cancellation_type::terminal);
  settle();
  EXPECT_EQ(outcomes[0], "Operation canceled");
  EXPECT_EQ(gated->loads, 3) << "no waiter took the refresh over";
  gated->open();
  settle();
  EXPECT_EQ(outcomes, (std::vector<Outcome>{"Operation canceled", "AKID3", "AKID3"}));
}

TEST_F(S3CachedProviderConcurrency, CancelledWaiterLeavesTheRefreshToTheOthers) {
  load_first();
  clock = start + 71min;
  boost::asio::cancellation_signal cancel;
  call(0);
  call(1, &cancel);
  call(2);
  settle();
  cancel.emit(boost::asio::cancellation_type::terminal);
  settle();
  gated->open();
  settle();
  EXPECT_EQ(outcomes, (std::vector<Outcome>{"AKID2", "Operation canceled", "AKID2"}));
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
