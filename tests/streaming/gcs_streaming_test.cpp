// Whole streams from the GCS fixture over gs:// URLs: with a service account's tokens, through
// STORAGE_EMULATOR_HOST, with a token the service refuses, and through server errors.

#include <gtest/gtest.h>

#include <memory>

#include "storage/gcs_test_environment.hpp"
#include "streaming/synthetic_stream.hpp"
#include "support/fault_proxy.hpp"
#include "support/gcs_fixture_server.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using gcs::testing::FixedToken;
using testing::GcsFixtureServer;
using testing::TempDir;
using testing::expect_whole_model;
using testing::small_chunks;

const std::string account = "loader@tensorstream-tests.iam.gserviceaccount.com";

class GcsStreaming : public gcs::testing::GcsEnvironmentTest {
 protected:
  // Generates a synthetic checkpoint and uploads it under `prefix` of bucket "models".
  static void upload(GcsFixtureServer& google, const std::string& prefix,
                     const SyntheticModelOptions& options) {
    TempDir dir;
    generate_synthetic_model(dir.path(), options);
    google.put_directory("models", prefix, dir.path());
  }

  // Options reaching `google` with quick retries.
  static StreamerOptions options_for(const GcsFixtureServer& google) {
    StreamerOptions options = small_chunks();
    options.store.gcs().endpoint = google.endpoint();
    options.store.http().retry_base_delay = std::chrono::milliseconds(1);
    options.store.http().retry_max_delay = std::chrono::milliseconds(5);
    return options;
  }

  // How many requests `google` got whose target starts with `prefix`.
  static std::size_t count(const GcsFixtureServer& google, std::string_view prefix) {
    std::size_t n = 0;
    for (const auto& request : google.requests()) n += request.target.starts_with(prefix);
    return n;
  }
};

TEST_F(GcsStreaming, ServiceAccountStreamsAModelByteExact) {
  GcsFixtureServer google({.service_account = account,
                           .service_account_public_key = key().public_key});
  upload(google, "tiny/", {.preset = "tiny"});
  set("GOOGLE_APPLICATION_CREDENTIALS",
      write("key.json", testing::service_account_key_file(account, key().private_key,
                                                          google.token_uri()))
          .string());

  RawStreamer streamer("gs://models/tiny/model.safetensors", options_for(google));
  expect_whole_model(streamer);
  EXPECT_EQ(streamer.stats().io_mode, "http");
  EXPECT_EQ(streamer.stats().retries, 0u);
  EXPECT_EQ(count(google, "/token"), 1u);
  for (const auto& request : google.requests()) {
    if (request.target != "/token") {
      EXPECT_EQ(request.authorization, "Bearer ya29.fixture-token-1");
    }
  }
}

TEST_F(GcsStreaming, ShardedModelUnderAPrefixStreamsThroughTheEmulatorHost) {
  GcsFixtureServer emulator({.require_token = false});
  upload(emulator, "sharded/", {.preset = "tiny", .shards = 3});
  set("STORAGE_EMULATOR_HOST", emulator.host());

  RawStreamer streamer("gs://models/sharded/", small_chunks());
  expect_whole_model(streamer);
  // Three shards and config.json, generation_config.json and tokenizer.json: three list pages.
  EXPECT_EQ(count(emulator, "/storage/v1/b/models/o?"), 3u);
  for (const auto& request : emulator.requests()) EXPECT_EQ(request.authorization, "");
}

TEST_F(GcsStreaming, RefusedTokenFailsAtOnceNamingTheObject) {
  GcsFixtureServer google({});
  upload(google, "tiny/", {.preset = "tiny"});
  StreamerOptions options = options_for(google);
  options.store.gcs().token_provider = std::make_shared<FixedToken>("ya29.expired");
  RawStreamer streamer("gs://models/tiny/model.safetensors", options);
  try {
    streamer.next_blocking();
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "gs://models/tiny/model.safetensors: Invalid Credentials (HTTP 401)");
    EXPECT_FALSE(error.transient());
  }
  EXPECT_EQ(google.requests().size(), 1u) << "a 401 must not be retried";
}

TEST_F(GcsStreaming, ServiceUnavailableIsRetriedAndTheStreamIsExact) {
  GcsFixtureServer google({.fail_media_first = 3, .fail_status = 503});
  upload(google, "tiny/", {.preset = "tiny"});
  StreamerOptions options = options_for(google);
  options.store.gcs().token_provider = std::make_shared<FixedToken>(google.issue_token());
  RawStreamer streamer("gs://models/tiny/model.safetensors", options);
  expect_whole_model(streamer);
  EXPECT_EQ(streamer.stats().retries, 3u);
}

TEST_F(GcsStreaming, BackendErrorsResetsAndShortBodiesAreRetriedAndTheStreamIsExact) {
  GcsFixtureServer google({});
  upload(google, "tiny/", {.preset = "tiny"});
  testing::FaultProxy proxy(
      google.port(),
      {.fail_first = 2,
       .fail_content_type = "application/json",
       .fail_body = R"({"error":{"code":503,"message":"Backend Error","errors":[]}})",
       .reset_first = 2,
       .truncate_first = 2,
       .cut_after = 5000});
  StreamerOptions options = options_for(google);
  options.store.gcs().endpoint = proxy.endpoint();
  options.store.gcs().token_provider = std::make_shared<FixedToken>(google.issue_token());
  // The first reads may meet every fault in a row: the attempts allowed must outnumber them.
  options.store.http().max_retries = 8;
  RawStreamer streamer("gs://models/tiny/", options);
  expect_whole_model(streamer);
  EXPECT_EQ(proxy.injected(), 6);
  EXPECT_GE(streamer.stats().retries, 6u);
}

}  // namespace
}  // namespace tensorstream
