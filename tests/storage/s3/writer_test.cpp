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
#include <openssl/evp.h>

#include "storage/s3/digest.hpp"
#include "storage/s3_upload_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/logged_messages.hpp"
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

using s3::testing::Answer;
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

// The ETag s3rver gives every object, multipart or not: the hex MD5 of its bytes.
std::string s3rver_md5(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_md5(), nullptr);
  return s3::to_hex(std::string_view(reinterpret_cast<const char*>(digest), length));
}

const std::string slow_down =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
    "<Message>Please reduce your request rate.</Message></Error>";
const std::string internal_error =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code>"
    "<Message>We encountered an internal error. Please try again.</Message></Error>";
// The cause of a completion that failing_completions() refused ten times.
const std::string refused_ten_times =
    "InternalError: We encountered an internal error. Please try again. (HTTP 500) (after 10 "
    "attempts)";
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

  // A store of "models" at `endpoint` that waits 1 s for a response header, and so 6 s for the
  // answer to a completion. (Under TSan a 5 MiB part's answer through the proxy from s3rver took
  // longer than 500 ms.)
  S3Store impatient_store(const std::string& endpoint) {
    HttpOptions http;
    http.response_timeout = std::chrono::seconds(1);
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.throttle_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    return S3Store(io_.get_executor(), Url::parse("s3://models/"), http, {.endpoint = endpoint});
  }

  // A FaultProxy answer that fails every CompleteMultipartUpload after the first with 500
  // InternalError, answers a HEAD of `key` with `head` when given, and leaves the rest to
  // abort_emulation(). Counts the completions in completions_.
  Answer failing_completions(const std::string& key, const std::string& head = {}) {
    return [this, key, head, abort = abort_emulation()](const std::string& method,
                                                          const std::string& target) {
      if (is_completion(method, target) && completions_++ > 0) {
        return s3::testing::response("500 Internal Server Error", internal_error);
      }
      if (method == "HEAD" && target == "/models" + key && !head.empty()) return head;
      return abort(method, target);
    };
  }

  // What uploading `content` as `key` and committing throws; "no error" when nothing does.
  std::string failure_of(S3Store& s3, const std::string& key, const std::string& content) {
    try {
      upload(s3, key, content, small_parts());
    } catch (const StorageError& error) {
      return error.what();
    }
    return "no error";
  }

  static bool is_completion(const std::string& method, const std::string& target) {
    return method == "POST" && target.find("uploadId=") != std::string::npos;
  }

  std::atomic<int> completions_{0};

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

TEST_F(S3WriterTest, ACompletionWhoseAnswerIsLostAndWhoseRetriesFailIsDoneWhenTheObjectIs) {
  FaultProxy proxy(s3rver_->port(), {.answer = failing_completions("/lost.bin"),
                                     .lose_answer = is_completion});
  auto s3 = impatient_store(proxy.endpoint());
  const std::string content = random_bytes(11 * MiB, 12);
  testing::LoggedMessages warnings(LogLevel::warning);
  upload(s3, "/lost.bin", content, small_parts());
  EXPECT_EQ(stored("/lost.bin"), content);
  EXPECT_EQ(completions_, 10);  // The lost one and nine refused.
  EXPECT_EQ(aborts_, 0);
  const auto messages = warnings.messages();
  ASSERT_FALSE(messages.empty());
  EXPECT_EQ(messages.back(), "s3://models/lost.bin: " + refused_ten_times +
                                 "; but the object is complete (11534336 bytes, ETag \"" +
                                 s3rver_md5(content) +
                                 "\"): the store completed it and its answer was lost");
}

TEST_F(S3WriterTest, ACompletionThatFailsForGoodFailsTheCommitWhenNoObjectIsThere) {
  FaultProxy proxy(s3rver_->port(), {.answer = [&](const std::string& method,
                                                   const std::string& target) -> std::string {
    if (is_completion(method, target)) {
      ++completions_;
      return s3::testing::response("500 Internal Server Error", internal_error);
    }
    return abort_emulation()(method, target);
  }});
  auto s3 = impatient_store(proxy.endpoint());
  EXPECT_EQ(failure_of(s3, "/failed.bin", random_bytes(11 * MiB, 13)),
            "s3://models/failed.bin: " + refused_ten_times);
  EXPECT_EQ(completions_, 10);
  EXPECT_EQ(aborts_, 1);
  EXPECT_FALSE(exists("/failed.bin"));
}

TEST_F(S3WriterTest, AnObjectWithAnotherMultipartETagIsNotTheUploadedOne) {
  const std::string content = random_bytes(11 * MiB, 14);
  // The size uploaded, under the ETag of another three-part upload.
  const std::string head =
      "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(content.size()) +
      "\r\nETag: \"0123456789abcdef0123456789abcdef-3\"\r\n\r\n";
  FaultProxy proxy(s3rver_->port(), {.answer = failing_completions("/other.bin", head),
                                     .lose_answer = is_completion});
  auto s3 = impatient_store(proxy.endpoint());
  EXPECT_EQ(failure_of(s3, "/other.bin", content), "s3://models/other.bin: " + refused_ten_times);
  EXPECT_EQ(completions_, 10);
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
