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
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3_store.hpp"

namespace tensorstream {
namespace {

using std::chrono::system_clock;
using testing::FaultProxy;
using testing::S3rverServer;
using testing::SignatureVerifier;

constexpr std::size_t MiB = std::size_t{1} << 20;

using Answer = std::function<std::string(const std::string&, const std::string&)>;

// 2026-01-02T03:04:05Z, a time long past.
const system_clock::time_point long_ago = system_clock::from_time_t(1767323045);

std::string iso8601(system_clock::time_point time) {
  const std::time_t seconds = system_clock::to_time_t(time);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S.000Z", &parts);
  return text;
}

struct Listed {
  std::string key;
  std::string id;
  system_clock::time_point initiated;
};

// A ListMultipartUploadsResult as AWS writes it, continued after `next` (key, id) when given.
std::string uploads_page(const std::string& prefix, const std::vector<Listed>& uploads,
                         const std::optional<std::pair<std::string, std::string>>& next) {
  std::string body =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListMultipartUploadsResult "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>models</Bucket>"
      "<KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>";
  if (next) {
    body += "<NextKeyMarker>" + next->first + "</NextKeyMarker><NextUploadIdMarker>" +
            next->second + "</NextUploadIdMarker>";
  }
  body += "<Prefix>" + prefix + "</Prefix><MaxUploads>1000</MaxUploads><IsTruncated>" +
          std::string(next ? "true" : "false") + "</IsTruncated>";
  for (const Listed& upload : uploads) {
    body += "<Upload><Key>" + upload.key + "</Key><UploadId>" + upload.id +
            "</UploadId><Initiator><ID>arn:aws:iam::111122223333:user/loader</ID>"
            "<DisplayName>loader</DisplayName></Initiator><Owner><ID>75aa57f09aa0c8caeab4f8c2"
            "</ID><DisplayName>owner</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
            "<Initiated>" +
            iso8601(upload.initiated) + "</Initiated></Upload>";
  }
  return body + "</ListMultipartUploadsResult>";
}

std::string response(const std::string& status, const std::string& body) {
  return "HTTP/1.1 " + status + "\r\nContent-Type: application/xml\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

const std::string no_content = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
const std::string no_such_upload = response(
    "404 Not Found",
    "<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message>"
    "</Error>");

bool is_listing(const std::string& method, const std::string& target) {
  return method == "GET" && target.ends_with("&uploads");
}

bool is_abort(const std::string& method, const std::string& target) {
  return method == "DELETE" && target.find("?uploadId=") != std::string::npos;
}

// The value of parameter `name` in `target`'s query, percent-decoded.
std::string parameter(const std::string& target, const std::string& name) {
  const std::regex pattern("[?&]" + name + "=([^&]*)");
  std::smatch match;
  if (!std::regex_search(target, match, pattern)) return "";
  const std::string encoded = match[1];
  std::string decoded;
  for (std::size_t i = 0; i < encoded.size(); ++i) {
    if (encoded[i] == '%' && i + 2 < encoded.size()) {
      decoded += static_cast<char>(std::stoi(encoded.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      decoded += encoded[i];
    }
  }
  return decoded;
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

  // ListMultipartUploads and AbortMultipartUpload as s3rver would carry them out, on its
  // storage directory: one page of the uploads of keys starting with the prefix.
  Answer s3rver_emulation() {
    return recorded([this, abort = abort_emulation()](const std::string& method,
                                                       const std::string& target) -> std::string {
      if (!is_listing(method, target)) return abort(method, target);
      const std::string prefix = parameter(target, "prefix");
      std::vector<Listed> listed;
      for (const auto& upload : s3rver_->unfinished_upload_details("models")) {
        if (upload.key.starts_with(prefix)) {
          listed.push_back({upload.key, upload.id, upload.initiated});
        }
      }
      return response("200 OK", uploads_page(prefix, listed, std::nullopt));
    });
  }

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
