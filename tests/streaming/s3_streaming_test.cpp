// Whole streams from a real S3 server (s3rver), directly and through a proxy that breaks
// responses the way S3 and networks do.

#include <gtest/gtest.h>

#include <memory>

#include "storage/s3rver_test.hpp"
#include "streaming/synthetic_stream.hpp"
#include "support/fault_proxy.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/synthetic_model.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {
namespace {

using testing::FaultProxy;
using testing::TempDir;
using testing::expect_whole_model;
using testing::small_chunks;

const std::string slow_down =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please "
    "reduce your request rate.</Message></Error>";

class S3Streaming : public s3::testing::S3rverTest {
 protected:
  // Generates a synthetic checkpoint and uploads it under `prefix`.
  void upload(const std::string& prefix, SyntheticModelOptions options) {
    TempDir dir;
    generate_synthetic_model(dir.path(), options);
    s3rver_->put_directory("models", prefix, dir.path());
  }

  static StreamerOptions quick_retries(StreamerOptions options = small_chunks()) {
    options.store.http().max_retries = 4;
    options.store.http().retry_base_delay = std::chrono::milliseconds(1);
    options.store.http().retry_max_delay = std::chrono::milliseconds(5);
    return options;
  }
};

TEST_F(S3Streaming, SingleFileModelUnderAPrefixStreamsByteExact) {
  upload("tiny/", {.preset = "tiny"});
  RawStreamer streamer("s3://models/tiny/", small_chunks());
  expect_whole_model(streamer);
  EXPECT_EQ(streamer.stats().io_mode, "http");
}

TEST_F(S3Streaming, ShardedModelWithAnIndexStreamsByteExact) {
  upload("sharded/", {.preset = "tiny", .shards = 3, .index = true});
  RawStreamer streamer("s3://models/sharded/", small_chunks());
  expect_whole_model(streamer);
}

TEST_F(S3Streaming, ShardsWithoutAnIndexStreamByteExact) {
  upload("no index/", {.preset = "tiny", .shards = 3});
  RawStreamer streamer("s3://models/no index/", small_chunks());
  expect_whole_model(streamer);
}

TEST_F(S3Streaming, SlowDownResetsAndShortBodiesAreRetriedAndTheStreamIsExact) {
  upload("tiny/", {.preset = "tiny"});
  FaultProxy proxy(s3rver_->port(), {.fail_first = 3,
                                     .fail_body = slow_down,
                                     .reset_first = 3,
                                     .truncate_first = 3,
                                     .cut_after = 5000});
  set("AWS_ENDPOINT_URL", proxy.endpoint());
  // The first reads may meet every fault in a row: the attempts allowed must outnumber them.
  StreamerOptions options = quick_retries();
  options.store.http().max_retries = 10;
  RawStreamer streamer("s3://models/tiny/", options);
  expect_whole_model(streamer);
  EXPECT_EQ(proxy.injected(), 9);
  EXPECT_GE(streamer.stats().retries, 9u);
}

TEST_F(S3Streaming, AStalledResponseIsAbandonedAndRetried) {
  upload("tiny/", {.preset = "tiny"});
  FaultProxy proxy(s3rver_->port(), {.stall_first = 2});
  set("AWS_ENDPOINT_URL", proxy.endpoint());
  StreamerOptions options = quick_retries();
  options.store.http().read_timeout = std::chrono::milliseconds(300);
  RawStreamer streamer("s3://models/tiny/", options);
  expect_whole_model(streamer);
  EXPECT_EQ(proxy.injected(), 2);
  EXPECT_GE(streamer.stats().retries, 2u);
}

TEST_F(S3Streaming, PersistentSlowDownFailsNamingTheCodeAfterTheRetries) {
  upload("tiny/", {.preset = "tiny"});
  FaultProxy proxy(s3rver_->port(), {.fail_first = 1000, .fail_body = slow_down});
  set("AWS_ENDPOINT_URL", proxy.endpoint());
  RawStreamer streamer("s3://models/tiny/model.safetensors", quick_retries());
  try {
    streamer.next_blocking();
    FAIL() << "expected StorageError";
  } catch (const StorageError& error) {
    EXPECT_STREQ(error.what(),
                 "s3://models/tiny/model.safetensors: SlowDown: Please reduce your request rate. "
                 "(HTTP 503) (after 5 attempts)");
    EXPECT_TRUE(error.transient());
  }
}

TEST_F(S3Streaming, AMissingObjectFailsFastNamingIt) {
  RawStreamer streamer("s3://models/absent/model.safetensors", quick_retries());
  try {
    streamer.next_blocking();
    FAIL() << "expected NotFoundError";
  } catch (const NotFoundError& error) {
    EXPECT_STREQ(error.what(), "s3://models/absent/model.safetensors: NoSuchKey: The specified "
                               "key does not exist. (HTTP 404)");
  }
}

}  // namespace
}  // namespace tensorstream
