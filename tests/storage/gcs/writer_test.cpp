// Writing objects to the GCS fixture: media uploads, resumable uploads in 256 KiB-aligned chunks,
// retried and resumed from what the server persisted, and failed or abandoned uploads that must
// leave no session and no object.

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "storage/gcs_test_environment.hpp"
#include "support/gcs_fixture_server.hpp"
#include "support/logged_messages.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/units.hpp"
#include "support/write_all.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/gcs_store.hpp"

namespace tensorstream {
namespace {

using testing::KiB;
using testing::MiB;
using gcs::testing::FixedToken;
using testing::GcsFixtureServer;
using testing::random_bytes;
using testing::write_all;

// Objects over 1 MiB go up resumably, in chunks of 512 KiB (300 KB rounded up to 256 KiB).
constexpr WriteOptions small_chunks{.single_put_limit = 1 * MiB, .part_size = 300'000};

// The cause of the fixture's 503 to an upload, as the store reports it.
constexpr const char* unavailable =
    "We encountered an internal error. Please try again. (HTTP 503)";

const std::string denied =
    "loader@tensorstream-tests.iam.gserviceaccount.com does not have storage.objects.create "
    "access to the Google Cloud Storage object. Permission 'storage.objects.create' denied on "
    "resource (or it may not exist). (HTTP 403)";

class GcsWriterTest : public gcs::testing::GcsEnvironmentTest {
 protected:
  explicit GcsWriterTest(GcsFixtureServer::Options faults = {}) : google_(std::move(faults)) {
    google_.make_public("other");
    google_.put("models", "placeholder", "");
  }

  // A store of `bucket` with `options`, and quick retries.
  std::unique_ptr<GcsStore> store(GcsOptions options, const std::string& bucket = "models") {
    HttpOptions http;
    http.response_timeout = response_timeout_;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.throttle_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    return std::make_unique<GcsStore>(io_.get_executor(), Url::parse("gs://" + bucket + "/"), http,
                                      std::move(options));
  }

  // A store of bucket "models" (or `bucket`) on the fixture, with a token it issued.
  std::unique_ptr<GcsStore> store(const std::string& bucket = "models") {
    return store(GcsOptions{.endpoint = google_.endpoint(),
                  .token_provider = std::make_shared<FixedToken>(google_.issue_token())},
                 bucket);
  }

  // Writes `content` as `key` in pieces of `piece` bytes and commits.
  void upload(const std::string& key, const std::string& content, WriteOptions options,
              std::size_t piece = 100'000) {
    auto gcs = store();
    auto writer = gcs->create_writer(key, options);
    testing::run_task(io_, write_all(*writer, content, piece));
  }

  // The object `key` as a new store reads it.
  std::string read_back(const std::string& key) {
    auto gcs = store();
    const auto size = testing::run_task(io_, gcs->size(key));
    return testing::read_string(io_, *gcs, key, 0, size);
  }

  // The upload requests the fixture got, as "METHOD TARGET", with "[Content-Range]" for chunks.
  std::vector<std::string> uploads() const {
    std::vector<std::string> seen;
    for (const auto& request : google_.requests()) {
      if (!request.target.starts_with("/upload/")) continue;
      std::string line = request.method + " " + request.target;
      if (!request.content_range.empty()) {
        line = request.method + " [" + request.content_range + "]";
      }
      seen.push_back(line);
    }
    return seen;
  }

  // The StorageError that writing `content` as `key` throws.
  std::string failure_of(const std::string& key, const std::string& content,
                         const std::string& bucket = "models") {
    auto gcs = store(bucket);
    auto writer = gcs->create_writer(key, small_chunks);
    try {
      testing::run_task(io_, write_all(*writer, content, 100'000));
    } catch (const StorageError& error) {
      return error.what();
    }
    return "no error";
  }

  boost::asio::io_context io_;
  GcsFixtureServer google_;
  std::optional<std::chrono::milliseconds> response_timeout_;  // Of the stores; unset: default.
};

TEST_F(GcsWriterTest, SmallObjectsAreOneMediaUploadWithExactBytes) {
  ASSERT_TRUE(store()->can_write());
  const std::string content = random_bytes(300'000, 1);
  upload("/dir/a b+c.bin", content, small_chunks, 4096);
  upload("/dir/empty.bin", "", small_chunks);
  EXPECT_EQ(read_back("/dir/a b+c.bin"), content);
  EXPECT_EQ(read_back("/dir/empty.bin"), "");
  const std::vector<std::string> expected{
      "POST /upload/storage/v1/b/models/o?uploadType=media&name=dir%2Fa%20b%2Bc.bin",
      "POST /upload/storage/v1/b/models/o?uploadType=media&name=dir%2Fempty.bin"};
  EXPECT_EQ(uploads(), expected);
  for (const auto& request : google_.requests()) {
    if (request.target.starts_with("/upload/")) {
      EXPECT_TRUE(request.authorization.starts_with("Bearer ya29.fixture-token-"));
    }
  }
}

TEST_F(GcsWriterTest, ExactlyTheSinglePutLimitIsOneMediaUpload) {
  const std::string content = random_bytes(1 * MiB, 2);
  upload("/edge.bin", content, small_chunks, 1 * MiB);
  EXPECT_EQ(read_back("/edge.bin"), content);
  EXPECT_EQ(uploads().size(), 1u);
}

TEST_F(GcsWriterTest, LargeObjectsAreResumableUploadsInAlignedChunksWithExactBytes) {
  const std::string content = random_bytes(2 * MiB + 1234, 3);
  upload("/big/model.safetensors", content, small_chunks);
  EXPECT_EQ(read_back("/big/model.safetensors"), content);
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
  const std::vector<std::string> expected{
      "POST /upload/storage/v1/b/models/o?uploadType=resumable&name=big%2Fmodel.safetensors",
      "PUT [bytes 0-524287/*]",
      "PUT [bytes 524288-1048575/*]",
      "PUT [bytes 1048576-1572863/*]",
      "PUT [bytes 1572864-2097151/*]",
      "PUT [bytes 2097152-2098385/2098386]"};
  EXPECT_EQ(uploads(), expected);
}

TEST_F(GcsWriterTest, AnObjectOfWholeChunksEndsWithAFullLastChunk) {
  const std::string content = random_bytes(2 * MiB, 4);
  upload("/whole.bin", content, small_chunks, 256 * KiB);
  EXPECT_EQ(read_back("/whole.bin"), content);
  const auto seen = uploads();
  ASSERT_EQ(seen.size(), 5u);
  EXPECT_EQ(seen.back(), "PUT [bytes 1572864-2097151/2097152]");
}

TEST_F(GcsWriterTest, PartSizesBelowGcsGranularityAndPrefixesAreRefusedWithTheUrl) {
  auto gcs = store();
  try {
    gcs->create_writer("/x.bin", {.part_size = 100 * KiB});
    FAIL();
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "gs://models/x.bin: part size 102400 is outside GCS's range of 256 KiB to 5 GiB");
  }
  EXPECT_THROW(gcs->create_writer("/dir/", {}), InvalidArgument);
  EXPECT_THROW(gcs->create_writer("/", {}), InvalidArgument);
}

class GcsWriterLostCompletionTest : public GcsWriterTest {
 protected:
  // A 500 ms response timeout, so 3 s for the last chunk.
  GcsWriterLostCompletionTest() : GcsWriterTest({.lose_completions_first = 1}) {
    response_timeout_ = std::chrono::milliseconds(500);
  }
};

TEST_F(GcsWriterLostCompletionTest, ALastChunkWhoseAnswerIsLostIsDoneWhenTheObjectIsNew) {
  const std::string content = random_bytes(2 * MiB + 10, 20);
  // An earlier object of the same size, which must not pass for the new one.
  const auto earlier = google_.put("models", "lost.bin", random_bytes(content.size(), 21));
  testing::LoggedMessages warnings(LogLevel::warning);
  upload("/lost.bin", content, small_chunks);
  EXPECT_EQ(read_back("/lost.bin"), content);
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
  const auto messages = warnings.messages();
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.back(),
            "gs://models/lost.bin: " + std::string(unavailable) +
                " (after 10 attempts); but the object is complete (2097162 bytes, generation " +
                std::to_string(earlier + 1) +
                "): the store completed it and its answer was lost");
}

class GcsWriterFaultTest : public GcsWriterTest {
 protected:
  GcsWriterFaultTest()
      : GcsWriterTest({.fail_upload_first = 2, .fail_chunks_first = 3, .cut_chunks_first = 2}) {}
};

TEST_F(GcsWriterFaultTest, TransientFailuresAreRetriedAndTheBytesStayExact) {
  const std::string small = random_bytes(500'000, 5);
  // Two 503s for the media upload.
  upload("/small.bin", small, small_chunks);
  EXPECT_EQ(read_back("/small.bin"), small);
  // Three 503s for the first chunks, then two chunks cut in half.
  const std::string large = random_bytes(3 * MiB + 99, 6);
  auto gcs = store();
  auto writer = gcs->create_writer("/large.bin", small_chunks);
  testing::run_task(io_, write_all(*writer, large, 100'000));
  EXPECT_EQ(read_back("/large.bin"), large);
  EXPECT_GE(gcs->stats().retries, 5u);
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
}

TEST_F(GcsWriterFaultTest, AChunkCutMidwayIsResumedFromWhatTheServerPersisted) {
  const std::string content = random_bytes(2 * MiB + 10, 7);
  upload("/resumed.bin", content, small_chunks);
  EXPECT_EQ(read_back("/resumed.bin"), content);
  const auto seen = uploads();
  // The two 503s of the session start; three 503s answer the first chunk, each followed by a
  // status query that finds nothing persisted; the next two attempts are cut after 256 KiB, and
  // the status query says so.
  const std::vector<std::string> expected{
      "POST /upload/storage/v1/b/models/o?uploadType=resumable&name=resumed.bin",
      "POST /upload/storage/v1/b/models/o?uploadType=resumable&name=resumed.bin",
      "POST /upload/storage/v1/b/models/o?uploadType=resumable&name=resumed.bin",
      "PUT [bytes 0-524287/*]",
      "PUT [bytes */*]",
      "PUT [bytes 0-524287/*]",
      "PUT [bytes */*]",
      "PUT [bytes 0-524287/*]",
      "PUT [bytes */*]",
      "PUT [bytes 0-524287/*]",
      "PUT [bytes */*]",
      "PUT [bytes 262144-524287/*]",
      "PUT [bytes 524288-1048575/*]",
      "PUT [bytes */*]",
      "PUT [bytes 786432-1048575/*]",
      "PUT [bytes 1048576-1572863/*]",
      "PUT [bytes 1572864-2097151/*]",
      "PUT [bytes 2097152-2097161/2097162]"};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
}

class GcsWriterDeniedTest : public GcsWriterTest {
 protected:
  GcsWriterDeniedTest()
      : GcsWriterTest({.fail_upload_first = 1000, .upload_fail_status = 403}) {}
};

TEST_F(GcsWriterDeniedTest, PermanentErrorsFailAtOnceNamingTheObject) {
  EXPECT_EQ(failure_of("/denied.bin", "tiny"), "gs://models/denied.bin: " + denied);
  EXPECT_EQ(failure_of("/large.bin", random_bytes(2 * MiB, 8)),
            "gs://models/large.bin: " + denied);
  EXPECT_EQ(uploads().size(), 2u) << "a permanent error was retried";
  EXPECT_FALSE(google_.stored("models", "denied.bin"));
  EXPECT_FALSE(google_.stored("models", "large.bin"));
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
}

TEST_F(GcsWriterTest, AMissingBucketIsNotFound) {
  auto gcs = store("absent");
  auto writer = gcs->create_writer("/x.bin", small_chunks);
  try {
    testing::run_task(io_, write_all(*writer, "x", 1));
    FAIL() << "the upload succeeded";
  } catch (const NotFoundError& error) {
    EXPECT_EQ(std::string(error.what()),
              "gs://absent/x.bin: The specified bucket does not exist. (HTTP 404)");
  }
}

class GcsWriterChunkDeniedTest : public GcsWriterTest {
 protected:
  GcsWriterChunkDeniedTest()
      : GcsWriterTest({.upload_fail_status = 403, .fail_chunks_first = 1000}) {}
};

TEST_F(GcsWriterChunkDeniedTest, AFailedChunkCancelsTheSessionAndLeavesNothing) {
  auto gcs = store();
  auto writer = gcs->create_writer("/half.bin", small_chunks);
  const std::string content = random_bytes(3 * MiB, 9);
  try {
    testing::run_task(io_, write_all(*writer, content, 100'000));
    FAIL() << "the upload succeeded";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()), "gs://models/half.bin: " + denied);
  }
  const auto seen = uploads();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[1], "PUT [bytes 0-524287/*]");
  EXPECT_TRUE(seen[2].starts_with("DELETE /upload/storage/v1/b/models/o?uploadType=resumable"))
      << seen[2];
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
  EXPECT_FALSE(google_.stored("models", "half.bin"));
  // The failure aborted the writer already; abort() has nothing left to do.
  testing::run_task(io_, writer->abort());
  EXPECT_EQ(uploads().size(), 3u);
}

TEST_F(GcsWriterTest, AbortCancelsTheSessionAndLeavesNoObject) {
  auto gcs = store();
  auto writer = gcs->create_writer("/aborted.bin", small_chunks);
  const std::string content = random_bytes(1 * MiB + 600 * KiB, 10);
  testing::run_task(io_, writer->write(std::as_bytes(std::span(content))));
  EXPECT_EQ(google_.unfinished_sessions(), 1u);
  testing::run_task(io_, writer->abort());
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
  EXPECT_TRUE(uploads().back().starts_with("DELETE ")) << uploads().back();
  EXPECT_FALSE(google_.stored("models", "aborted.bin"));
  EXPECT_THROW(testing::run_task(io_, writer->commit()), StateError);

  // A writer that never outgrew one media upload sent nothing.
  const auto before = uploads().size();
  auto small = gcs->create_writer("/small.bin", small_chunks);
  testing::run_task(io_, small->write(std::as_bytes(std::span(content).first(1000))));
  testing::run_task(io_, small->abort());
  EXPECT_EQ(uploads().size(), before);
  EXPECT_FALSE(google_.stored("models", "small.bin"));
}

TEST_F(GcsWriterTest, AWriterDestroyedBeforeCommitCancelsItsSession) {
  auto gcs = store();
  auto writer = gcs->create_writer("/dropped.bin", small_chunks);
  const std::string content = random_bytes(2 * MiB, 11);
  testing::run_task(io_, writer->write(std::as_bytes(std::span(content))));
  EXPECT_EQ(google_.unfinished_sessions(), 1u);
  writer.reset();
  io_.restart();
  io_.run();
  EXPECT_EQ(google_.unfinished_sessions(), 0u);
  EXPECT_FALSE(google_.stored("models", "dropped.bin"));
}

TEST_F(GcsWriterTest, AnEarlierObjectIsReplacedOnlyOnCommit) {
  google_.put("models", "model.bin", "old bytes");
  const std::string content = random_bytes(2 * MiB + 5, 12);
  const auto bytes = std::as_bytes(std::span(content));
  auto gcs = store();

  auto aborted = gcs->create_writer("/model.bin", small_chunks);
  testing::run_task(io_, aborted->write(bytes));
  testing::run_task(io_, aborted->abort());
  EXPECT_EQ(read_back("/model.bin"), "old bytes");

  auto writer = gcs->create_writer("/model.bin", small_chunks);
  testing::run_task(io_, writer->write(bytes.first(2 * MiB)));
  EXPECT_EQ(read_back("/model.bin"), "old bytes");
  testing::run_task(io_, writer->write(bytes.subspan(2 * MiB)));
  EXPECT_EQ(read_back("/model.bin"), "old bytes");
  testing::run_task(io_, writer->commit());
  EXPECT_EQ(read_back("/model.bin"), content);
}

TEST_F(GcsWriterTest, ACancelledUploadCancelsItsSessionAndLeavesNothing) {
  boost::asio::cancellation_signal cancel;
  std::atomic<bool> cancelling{false};
  // Cancelled when the first chunk reaches the server, not after a fixed time. The signal is
  // emitted on the thread running io_, as Asio requires.
  GcsFixtureServer google({.on_upload = [&](const std::string& method, const std::string& range) {
    if (method == "PUT" && !range.empty() && !cancelling.exchange(true)) {
      boost::asio::post(io_, [&] { cancel.emit(boost::asio::cancellation_type::terminal); });
    }
  }});
  google.put("models", "placeholder", "");
  auto token = std::make_shared<FixedToken>(google.issue_token());
  auto gcs = store(GcsOptions{.endpoint = google.endpoint(), .token_provider = token});
  const std::string content = random_bytes(8 * MiB, 14);
  auto upload = [&]() -> boost::asio::awaitable<void> {
    auto writer = gcs->create_writer("/cancelled.bin", small_chunks);
    co_await write_all(*writer, content, 100'000);
  };
  auto done = boost::asio::co_spawn(
      io_, upload(), boost::asio::bind_cancellation_slot(cancel.slot(), boost::asio::use_future));
  // Runs until the upload is cancelled and its session too: by the writer, or, where the
  // cancellation struck between two writes, in the background once the writer is gone.
  io_.run();
  EXPECT_THROW(done.get(), boost::system::system_error);
  EXPECT_TRUE(cancelling);
  EXPECT_EQ(google.unfinished_sessions(), 0u);
  EXPECT_FALSE(google.stored("models", "cancelled.bin"));
  const auto requests = google.requests();
  ASSERT_FALSE(requests.empty());
  EXPECT_EQ(requests.back().method, "DELETE");
}

class GcsWriterCredentialsTest : public GcsWriterTest {
 protected:
  GcsWriterCredentialsTest() : GcsWriterTest({.service_account_public_key = key().public_key}) {}
};

TEST_F(GcsWriterCredentialsTest, ServiceAccountTokensAreScopedToWrite) {
  set("GOOGLE_APPLICATION_CREDENTIALS",
      write("key.json", testing::service_account_key_file(
                            "loader@tensorstream-tests.iam.gserviceaccount.com",
                            key().private_key, google_.token_uri()))
          .string());
  auto gcs = store(GcsOptions{.endpoint = google_.endpoint()});
  const std::string content = random_bytes(1 * MiB + 1, 13);
  auto writer = gcs->create_writer("/by-key.bin", small_chunks);
  testing::run_task(io_, write_all(*writer, content, 100'000));
  EXPECT_EQ(read_back("/by-key.bin"), content);
}

}  // namespace
}  // namespace tensorstream
