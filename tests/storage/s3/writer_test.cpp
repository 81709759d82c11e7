// Writing objects to a real S3 server (s3rver): single PUTs and multipart uploads, signatures
// re-verified by botocore, faults injected mid-part, and failed uploads that must leave nothing.

#include <gtest/gtest.h>

#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <memory>

#include "storage/s3_upload_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/write_all.hpp"
#include "support/s3rver_server.hpp"
#include "support/signature_verifier.hpp"
#include "support/skip.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "support/units.hpp"
#include "tensorstream/storage/gcs_store.hpp"
#include "tensorstream/storage/http_store.hpp"
#include "tensorstream/storage/s3_store.hpp"

namespace tensorstream {
namespace {

using testing::FaultProxy;
using testing::MiB;
using testing::S3rverServer;
using testing::SignatureVerifier;
using testing::random_bytes;
using testing::write_all;

// Small parts, so that multipart uploads of a few tens of MiB have several parts.
WriteOptions small_parts(std::size_t in_flight = 4) {
  return WriteOptions{
      .single_put_limit = 8 * MiB, .part_size = 5 * MiB, .max_parts_in_flight = in_flight};
}

const std::string slow_down =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
    "<Message>Please reduce your request rate.</Message></Error>";
const std::string access_denied =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code>"
    "<Message>Access Denied</Message></Error>";

class S3WriterTest : public s3::testing::S3UploadTest {
 protected:
  // Writes `content` as `key` in pieces of `piece` bytes and commits.
  void upload(S3Store& s3, const std::string& key, const std::string& content,
              WriteOptions options, std::size_t piece = 1 * MiB + 7) {
    auto writer = s3.create_writer(key, options);
    testing::run_task(io_, write_all(*writer, content, piece));
  }

  // Creates a writer of `key` and writes `content` with it, in pieces of 1 MiB.
  static boost::asio::awaitable<void> upload_new(S3Store& s3, std::string key,
                                                 const std::string& content, WriteOptions options) {
    auto writer = s3.create_writer(key, options);
    co_await write_all(*writer, content, 1 * MiB);
  }

  // The object `key` as s3rver serves it now, read with a store of its own.
  std::string stored(const std::string& key) {
    auto s3 = store(s3rver_->endpoint());
    const auto size = testing::run_task(io_, s3.size(key));
    return testing::read_string(io_, s3, key, 0, size);
  }
};

TEST_F(S3WriterTest, SmallObjectsAreOneSignedPutWithExactBytes) {
  if (auto why = SignatureVerifier::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
  SignatureVerifier verifier(s3rver_->port(), {{S3rverServer::access_key_id,
                                                S3rverServer::secret_access_key}});
  auto s3 = store(verifier.endpoint());
  ASSERT_TRUE(s3.can_write());
  const std::string content = random_bytes(300'000, 1);
  upload(s3, "/dir/a b+c.bin", content, small_parts(), 4096);
  upload(s3, "/dir/empty.bin", "", small_parts());
  EXPECT_EQ(stored("/dir/a b+c.bin"), content);
  EXPECT_EQ(stored("/dir/empty.bin"), "");
  EXPECT_EQ(verifier.counts().rejected, 0) << verifier.log();
  EXPECT_EQ(verifier.counts().verified, 2) << verifier.log();
  EXPECT_EQ(s3.stats().requests, 2u);
}

TEST_F(S3WriterTest, LargeObjectsAreSignedMultipartUploadsWithExactBytes) {
  if (auto why = SignatureVerifier::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
  SignatureVerifier verifier(s3rver_->port(), {{S3rverServer::access_key_id,
                                                S3rverServer::secret_access_key}});
  auto s3 = store(verifier.endpoint());
  const std::string content = random_bytes(23 * MiB + 123, 2);
  upload(s3, "/big/model.safetensors", content, small_parts());
  EXPECT_EQ(stored("/big/model.safetensors"), content);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_EQ(verifier.counts().rejected, 0) << verifier.log();
  // CreateMultipartUpload, 5 parts (4 of 5 MiB, one of 3 MiB + 123), CompleteMultipartUpload.
  EXPECT_EQ(verifier.counts().verified, 7) << verifier.log();
}

TEST_F(S3WriterTest, ExactlyTheSinglePutLimitIsOnePut) {
  auto s3 = store(s3rver_->endpoint());
  const std::string content = random_bytes(8 * MiB, 3);
  upload(s3, "/edge.bin", content, small_parts(), 8 * MiB);
  EXPECT_EQ(stored("/edge.bin"), content);
  EXPECT_EQ(s3.stats().requests, 1u);
}

TEST_F(S3WriterTest, PartsInFlightStayWithinTheBound) {
  FaultProxy proxy(s3rver_->port(), {});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(40 * MiB, 4);
  upload(s3, "/bounded.bin", content, small_parts(2), 3 * MiB);
  EXPECT_EQ(stored("/bounded.bin"), content);
  EXPECT_EQ(proxy.uploads(), 8);
  EXPECT_LE(proxy.max_uploads_in_flight(), 2);
  EXPECT_EQ(proxy.max_uploads_in_flight(), 2) << "parts were not uploaded concurrently";
}

TEST_F(S3WriterTest, SlowDownsAndResetsMidPartAreRetriedAndTheBytesStayExact) {
  FaultProxy proxy(s3rver_->port(), {.fail_body = slow_down,
                                     .upload_fail_first = 3,
                                     .upload_reset_first = 3,
                                     .upload_cut_after = 1 * MiB});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(27 * MiB + 5, 5);
  upload(s3, "/faulty.bin", content, small_parts());
  EXPECT_EQ(stored("/faulty.bin"), content);
  EXPECT_EQ(proxy.injected(), 6);
  EXPECT_GE(s3.stats().retries, 6u);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
}

TEST_F(S3WriterTest, APermanentFailureAbortsTheUploadAndLeavesNothing) {
  FaultProxy proxy(s3rver_->port(), {.fail_status = 403,
                                     .fail_body = access_denied,
                                     .upload_fail_first = 1000,
                                     .answer = abort_emulation()});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(30 * MiB, 6);
  auto writer = s3.create_writer("/denied.bin", small_parts());
  try {
    testing::run_task(io_, write_all(*writer, content, 1 * MiB));
    FAIL() << "the upload succeeded";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/denied.bin: AccessDenied: Access Denied (HTTP 403)");
  }
  EXPECT_EQ(aborts_, 1);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_FALSE(exists("/denied.bin"));
  // The failure aborted the writer already; abort() has nothing left to do.
  testing::run_task(io_, writer->abort());
  EXPECT_EQ(aborts_, 1);
}

TEST_F(S3WriterTest, AFailedSinglePutLeavesNoObject) {
  FaultProxy proxy(s3rver_->port(),
                   {.fail_status = 403, .fail_body = access_denied, .upload_fail_first = 1000});
  auto s3 = store(proxy.endpoint());
  EXPECT_THROW(upload(s3, "/small.bin", "tiny", small_parts()), StorageError);
  EXPECT_FALSE(exists("/small.bin"));
}

TEST_F(S3WriterTest, AbortRemovesTheUploadedParts) {
  FaultProxy proxy(s3rver_->port(), {.answer = abort_emulation()});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(17 * MiB, 7);
  auto writer = s3.create_writer("/aborted.bin", small_parts());
  testing::run_task(io_, writer->write(std::as_bytes(std::span(content))));
  EXPECT_EQ(s3rver_->unfinished_uploads("models").size(), 1u);
  testing::run_task(io_, writer->abort());
  EXPECT_EQ(aborts_, 1);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_FALSE(exists("/aborted.bin"));
  EXPECT_THROW(testing::run_task(io_, writer->commit()), StateError);
}

TEST_F(S3WriterTest, AWriterDestroyedBeforeCommitAbortsItsUpload) {
  FaultProxy proxy(s3rver_->port(), {.answer = abort_emulation()});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(12 * MiB, 8);
  auto writer = s3.create_writer("/dropped.bin", small_parts());
  testing::run_task(io_, writer->write(std::as_bytes(std::span(content))));
  writer.reset();
  io_.restart();
  io_.run();
  EXPECT_EQ(aborts_, 1);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_FALSE(exists("/dropped.bin"));
}

TEST_F(S3WriterTest, ACancelledUploadIsAbortedAndLeavesNothing) {
  boost::asio::cancellation_signal cancel;
  std::atomic<bool> cancelling{false};
  const auto emulate_abort = abort_emulation(true);
  // Cancelled when the first part reaches the proxy, not after a fixed time, which a slow
  // (sanitized) run may spend before it has created the upload. The signal is emitted on the
  // thread running io_, as Asio requires.
  const auto cancel_at_first_part = [&](const std::string& method, const std::string& target) {
    if (method == "PUT" && target.find("partNumber=") != std::string::npos &&
        !cancelling.exchange(true)) {
      boost::asio::post(io_, [&] { cancel.emit(boost::asio::cancellation_type::terminal); });
    }
    return emulate_abort(method, target);
  };
  FaultProxy proxy(s3rver_->port(), {.answer = cancel_at_first_part});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(64 * MiB, 11);
  auto done = boost::asio::co_spawn(
      io_, upload_new(s3, "/cancelled.bin", content, small_parts(1)),
      boost::asio::bind_cancellation_slot(cancel.slot(), boost::asio::use_future));
  // Runs until the upload is cancelled and aborted: by the writer, or, where the cancellation
  // struck between two writes, in the background once the writer is gone.
  io_.restart();
  io_.run();
  EXPECT_THROW(done.get(), boost::system::system_error);
  EXPECT_GE(proxy.uploads(), 1);
  EXPECT_LT(proxy.uploads(), 13) << "the upload finished before it was cancelled";
  EXPECT_EQ(aborts_, 1);
  settle(proxy);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_FALSE(exists("/cancelled.bin"));
}

TEST_F(S3WriterTest, AnAbortTheServerRefusesSaysWhichUploadStaysBehind) {
  // s3rver answers AbortMultipartUpload with 405 MethodNotAllowed.
  auto s3 = store(s3rver_->endpoint());
  const std::string content = random_bytes(9 * MiB, 9);
  auto writer = s3.create_writer("/kept.bin", small_parts());
  testing::run_task(io_, writer->write(std::as_bytes(std::span(content))));
  const auto uploads = s3rver_->unfinished_uploads("models");
  ASSERT_EQ(uploads.size(), 1u);
  try {
    testing::run_task(io_, writer->abort());
    FAIL() << "s3rver implemented AbortMultipartUpload";
  } catch (const StorageError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("s3://models/kept.bin: AbortMultipartUpload failed: MethodNotAllowed"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("the parts of upload " + uploads[0] + " stay stored"),
              std::string::npos)
        << message;
  }
}

TEST_F(S3WriterTest, AnErrorInTheAnswerToCompleteMultipartUploadFailsTheCommit) {
  FaultProxy proxy(s3rver_->port(), {.answer = [&](const std::string& method,
                                                   const std::string& target) -> std::string {
    if (method == "POST" && target.find("uploadId=") != std::string::npos) {
      const std::string body =
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>InternalError</Code>"
          "<Message>We encountered an internal error. Please try again.</Message></Error>";
      return "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }
    return abort_emulation()(method, target);
  }});
  auto s3 = store(proxy.endpoint());
  const std::string content = random_bytes(11 * MiB, 10);
  try {
    upload(s3, "/complete.bin", content, small_parts());
    FAIL() << "the commit succeeded";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/complete.bin: CompleteMultipartUpload failed: InternalError: We "
              "encountered an internal error. Please try again. (HTTP 200)");
    EXPECT_TRUE(error.transient());
  }
  EXPECT_EQ(aborts_, 1);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_FALSE(exists("/complete.bin"));
}

TEST_F(S3WriterTest, OptionsOutOfRangeAndReadOnlyStoresAreRefusedWithTheUrl) {
  auto s3 = store(s3rver_->endpoint());
  try {
    s3.create_writer("/x.bin", {.part_size = 1 * MiB});
    FAIL();
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/x.bin: part size 1048576 is outside S3's range of 5 MiB to 5 GiB");
  }
  EXPECT_THROW(s3.create_writer("/dir/", {}), InvalidArgument);

  HttpStore http(io_.get_executor(), Url::parse("http://127.0.0.1:1/"));
  EXPECT_FALSE(http.can_write());
  try {
    http.create_writer("/x.bin", {});
    FAIL();
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "http://127.0.0.1:1/x.bin: this store is read-only; objects can be written to "
              "file://, s3://, gs:// and az:// only");
  }
}

}  // namespace
}  // namespace tensorstream
