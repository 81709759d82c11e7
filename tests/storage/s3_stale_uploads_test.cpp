// S3Store::abort_stale_uploads: ListMultipartUploads page by page, then AbortMultipartUpload of
// the uploads old enough, signed; and the upload a writer killed mid-upload leaves on s3rver.
//
// s3rver 3.7.1 implements neither request (NotImplemented, 405), so the FaultProxy answers them:
// with AWS-shaped pages written by the test, or with what s3rver's storage directory holds.

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "storage/killed_writer.hpp"
#include "storage/s3_upload_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/s3rver_server.hpp"
#include "support/signature_verifier.hpp"
#include "support/skip.hpp"
#include "support/units.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3_store.hpp"

namespace tensorstream {
namespace {

using testing::MiB;
using s3::testing::Answer;
using s3::testing::is_listing;
using s3::testing::iso8601;
using s3::testing::no_content;
using s3::testing::no_such_upload;
using s3::testing::Listed;
using s3::testing::parameter;
using s3::testing::response;
using s3::testing::uploads_page;

using std::chrono::system_clock;
using testing::FaultProxy;
using testing::S3rverServer;
using testing::SignatureVerifier;

// 2026-01-02T03:04:05Z, a time long past.
const system_clock::time_point long_ago = system_clock::from_time_t(1767323045);

bool is_abort(const std::string& method, const std::string& target) {
  return method == "DELETE" && target.find("?uploadId=") != std::string::npos;
}

class S3StaleUploadsTest : public s3::testing::S3UploadTest {
 protected:
  StaleUploads abort_stale(const std::string& endpoint, const std::string& prefix,
                           system_clock::duration older_than) {
    auto s3 = store(endpoint);
    return testing::run_task(io_, s3.abort_stale_uploads(prefix, older_than));
  }

  // Records every request the proxy answers in place of s3rver.
  Answer recorded(Answer answer) {
    return [this, answer](const std::string& method, const std::string& target) {
      std::string reply = answer(method, target);
      if (!reply.empty()) {
        const std::lock_guard lock(mutex_);
        answered_.push_back(method + " " + target);
      }
      return reply;
    };
  }

  std::vector<std::string> answered() {
    const std::lock_guard lock(mutex_);
    return answered_;
  }

  // ListMultipartUploads and AbortMultipartUpload carried out on s3rver's storage, recorded.
  Answer s3rver_emulation() { return recorded(multipart_emulation()); }

  std::mutex mutex_;
  std::vector<std::string> answered_;
};

TEST_F(S3StaleUploadsTest, EveryPageIsListedAndOnlyUploadsOldEnoughAreAbortedSigned) {
  if (auto why = SignatureVerifier::unavailable()) TENSORSTREAM_SKIP_UNLESS_CI(*why);
  const auto recent = system_clock::now() - std::chrono::minutes(1);
  FaultProxy proxy(s3rver_->port(), {.answer = recorded([&](const std::string& method,
                                                            const std::string& target) {
    if (is_listing(method, target) && parameter(target, "key-marker").empty()) {
      return response("200 OK", uploads_page("llama/",
                                             {{"llama/a.bin", "id-a", long_ago},
                                              {"llama/b b.bin", "id-b", long_ago}},
                                             std::pair{"llama/b b.bin", "id-b"}));
    }
    if (is_listing(method, target)) {
      return response("200 OK",
                      uploads_page("llama/",
                                   {{"llama/d.bin", "id-d", recent},
                                    {"llama/sub/c.bin", "id-c", long_ago + std::chrono::hours(1)}},
                                   std::nullopt));
    }
    return is_abort(method, target) ? no_content : std::string();
  })});
  // Requests pass botocore's check on their way to the proxy.
  const std::string proxy_endpoint = proxy.endpoint();
  const auto proxy_port =
      static_cast<std::uint16_t>(std::stoi(proxy_endpoint.substr(proxy_endpoint.rfind(':') + 1)));
  SignatureVerifier verifier(proxy_port,
                             {{S3rverServer::access_key_id, S3rverServer::secret_access_key}});

  const StaleUploads stale = abort_stale(verifier.endpoint(), "/llama/", std::chrono::hours(1));

  EXPECT_EQ(answered(),
            (std::vector<std::string>{
                "GET /models/?prefix=llama%2F&uploads",
                "DELETE /models/llama/a.bin?uploadId=id-a",
                "DELETE /models/llama/b%20b.bin?uploadId=id-b",
                "GET /models/?key-marker=llama%2Fb%20b.bin&prefix=llama%2F&upload-id-marker=id-b"
                "&uploads",
                "DELETE /models/llama/sub/c.bin?uploadId=id-c"}));
  EXPECT_EQ(verifier.counts().rejected, 0) << verifier.log();
  EXPECT_EQ(verifier.counts().verified, 5) << verifier.log();
  ASSERT_EQ(stale.removed.size(), 3u);
  EXPECT_EQ(stale.removed[0].key, "/llama/a.bin");
  EXPECT_EQ(stale.removed[0].upload, "id-a");
  EXPECT_EQ(stale.removed[0].started, long_ago);
  EXPECT_EQ(stale.removed[1].key, "/llama/b b.bin");
  EXPECT_EQ(stale.removed[1].upload, "id-b");
  EXPECT_EQ(stale.removed[2].key, "/llama/sub/c.bin");
  EXPECT_EQ(stale.removed[2].upload, "id-c");
  EXPECT_EQ(stale.removed[2].started, long_ago + std::chrono::hours(1));
  EXPECT_EQ(stale.kept, 1u);
}

TEST_F(S3StaleUploadsTest, AKilledWriterLeavesNoObjectAndCleanupAbortsItsUpload) {
  // Parts of 5 MiB, one at a time: once 10 MiB are written, part 1 is stored and part 2 in
  // flight.
  testing::kill_writer_midway([&](const std::function<void()>& reached) {
    boost::asio::io_context io;
    S3Store s3(io.get_executor(), Url::parse("s3://models/"), {},
               {.endpoint = s3rver_->endpoint()});
    auto writer = s3.create_writer(
        "/killed/model.bin",
        {.single_put_limit = 8 * MiB, .part_size = 5 * MiB, .max_parts_in_flight = 1});
    const std::string content = testing::random_bytes(10 * MiB, 21);
    for (std::size_t at = 0; at < content.size(); at += MiB) {
      const auto piece = std::as_bytes(std::span(content).subspan(at, MiB));
      testing::run_task(io, writer->write(piece));
    }
    reached();
  });

  const auto uploads = s3rver_->unfinished_upload_details("models");
  ASSERT_EQ(uploads.size(), 1u);
  EXPECT_EQ(uploads[0].key, "killed/model.bin");
  EXPECT_FALSE(exists("/killed/model.bin"));
  auto s3 = store(s3rver_->endpoint());
  EXPECT_TRUE(testing::run_task(io_, s3.list("/killed/", ListDepth::recursive)).empty());

  FaultProxy proxy(s3rver_->port(), {.answer = s3rver_emulation()});
  const StaleUploads recent = abort_stale(proxy.endpoint(), "/killed/", std::chrono::hours(1));
  EXPECT_TRUE(recent.removed.empty());
  EXPECT_EQ(recent.kept, 1u);
  EXPECT_EQ(s3rver_->unfinished_uploads("models").size(), 1u);

  const StaleUploads stale = abort_stale(proxy.endpoint(), "/killed/", {});
  ASSERT_EQ(stale.removed.size(), 1u);
  EXPECT_EQ(stale.removed[0].key, "/killed/model.bin");
  EXPECT_EQ(stale.removed[0].upload, uploads[0].id);
  // To the second, as S3's Initiated times (and the emulation's) are written.
  EXPECT_EQ(stale.removed[0].started,
            std::chrono::floor<std::chrono::seconds>(uploads[0].initiated));
  EXPECT_EQ(stale.kept, 0u);
  EXPECT_TRUE(s3rver_->unfinished_uploads("models").empty());
  EXPECT_FALSE(exists("/killed/model.bin"));
  EXPECT_EQ(answered(),
            (std::vector<std::string>{"GET /models/?prefix=killed%2F&uploads",
                                      "GET /models/?prefix=killed%2F&uploads",
                                      "DELETE /models/killed/model.bin?uploadId=" + uploads[0].id}));
}

TEST_F(S3StaleUploadsTest, UploadsGoneMeanwhileAreSkipped) {
  FaultProxy proxy(s3rver_->port(), {.answer = recorded([&](const std::string& method,
                                                            const std::string& target) {
    if (is_listing(method, target)) {
      return response("200 OK", uploads_page("", {{"done.bin", "id-done", long_ago},
                                                  {"left.bin", "id-left", long_ago}},
                                             std::nullopt));
    }
    if (is_abort(method, target)) {
      return target.find("id-done") != std::string::npos ? no_such_upload : no_content;
    }
    return std::string();
  })});
  const StaleUploads stale = abort_stale(proxy.endpoint(), "/", {});
  ASSERT_EQ(stale.removed.size(), 1u);
  EXPECT_EQ(stale.removed[0].key, "/left.bin");
  EXPECT_EQ(answered().size(), 3u);
}

TEST_F(S3StaleUploadsTest, AnAbortTheServerRefusesNamesTheUploadThatStays) {
  // The listing is answered; the abort reaches s3rver, which answers 405 MethodNotAllowed.
  FaultProxy proxy(s3rver_->port(), {.answer = [&](const std::string& method,
                                                   const std::string& target) {
    return is_listing(method, target)
               ? response("200 OK", uploads_page("x/", {{"x/kept.bin", "id-kept", long_ago}},
                                                 std::nullopt))
               : std::string();
  }});
  try {
    abort_stale(proxy.endpoint(), "/x/", {});
    FAIL() << "the refused abort was not reported";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/x/kept.bin: AbortMultipartUpload failed: MethodNotAllowed: The "
              "specified method is not allowed against this resource. (HTTP 405); the parts of "
              "upload id-kept stay stored until aborted or removed by a lifecycle rule");
  }
}

TEST_F(S3StaleUploadsTest, ListingFailuresAndBadPrefixesAreErrorsNamingThePrefix) {
  // s3rver itself does not implement ListMultipartUploads.
  try {
    abort_stale(s3rver_->endpoint(), "/llama/", {});
    FAIL() << "s3rver listed multipart uploads";
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/llama/: NotImplemented: A parameter you provided implies "
              "functionality that is not implemented (HTTP 501)");
  }
  // A page that ends where it began would be fetched forever.
  FaultProxy proxy(s3rver_->port(), {.answer = [&](const std::string& method,
                                                   const std::string& target) {
    return is_listing(method, target)
               ? response("200 OK", uploads_page("", {}, std::pair{"a.bin", "id-a"}))
               : std::string();
  }});
  try {
    abort_stale(proxy.endpoint(), "/", {});
    FAIL() << "the endless listing ended";
  } catch (const FormatError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/: malformed ListMultipartUploads response: the next page would start "
              "where this one did");
  }
  try {
    abort_stale(s3rver_->endpoint(), "/llama", {});
    FAIL() << "a prefix without '/' was taken";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://models/llama: removing stale S3 uploads needs a prefix starting and ending "
              "with '/'");
  }
}

}  // namespace
}  // namespace tensorstream
