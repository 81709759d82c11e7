#pragma once
// Tests that upload to s3rver, directly or through a FaultProxy in front of it.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <regex>
#include <string>

#include "storage/s3rver_test.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3_store.hpp"

namespace tensorstream::s3::testing {

/// An S3rverTest with stores of bucket "models" run on io_, and AbortMultipartUpload, which
/// s3rver does not implement (it answers 405), carried out on s3rver's storage.
class S3UploadTest : public S3rverTest {
 protected:
  /// A store of "models" at `endpoint` (s3rver's, or a proxy's in front of it) whose retries
  /// wait only a millisecond or two.
  S3Store store(const std::string& endpoint) {
    HttpOptions http;
    http.retry_base_delay = std::chrono::milliseconds(1);
    http.throttle_base_delay = std::chrono::milliseconds(1);
    http.retry_max_delay = std::chrono::milliseconds(2);
    return S3Store(io_.get_executor(), Url::parse("s3://models/"), http, {.endpoint = endpoint});
  }

  /// Whether s3rver has the object `key` now, asked with a store of its own.
  bool exists(const std::string& key) {
    auto s3 = store(s3rver_->endpoint());
    try {
      tensorstream::testing::run_task(io_, s3.size(key));
      return true;
    } catch (const NotFoundError&) {
      return false;
    }
  }

  /// A FaultProxy answer that carries out AbortMultipartUpload on s3rver's storage, counting
  /// the aborts in aborts_, and leaves other requests to s3rver.
  std::function<std::string(const std::string&, const std::string&)> abort_emulation() {
    return [this](const std::string& method, const std::string& target) -> std::string {
      static const std::regex upload_id(".*[?&]uploadId=([0-9a-f]+).*");
      std::smatch match;
      if (method != "DELETE" || !std::regex_match(target, match, upload_id)) return {};
      ++aborts_;
      const bool removed = s3rver_->remove_upload("models", match[1]);
      return removed ? "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"
                     : "HTTP/1.1 404 Not Found\r\nContent-Type: application/xml\r\n"
                       "Content-Length: 40\r\n\r\n<Error><Code>NoSuchUpload</Code></Error>";
    };
  }

  boost::asio::io_context io_;
  std::atomic<int> aborts_{0};
};

}  // namespace tensorstream::s3::testing
