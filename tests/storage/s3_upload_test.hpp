#pragma once
// Tests that upload to s3rver, directly or through a FaultProxy in front of it.

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <ctime>
#include <functional>
#include <optional>
#include <mutex>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "storage/s3rver_test.hpp"
#include "support/fault_proxy.hpp"
#include "support/run_task.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/s3_store.hpp"

namespace tensorstream::s3::testing {

/// What a FaultProxy answers in place of its upstream: empty to forward the request.
using Answer = std::function<std::string(const std::string&, const std::string&)>;

inline std::string iso8601(std::chrono::system_clock::time_point time) {
  const std::time_t seconds = std::chrono::system_clock::to_time_t(time);
  std::tm parts{};
  ::gmtime_r(&seconds, &parts);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S.000Z", &parts);
  return text;
}

struct Listed {
  std::string key;
  std::string id;
  std::chrono::system_clock::time_point initiated;
};

// A ListMultipartUploadsResult as AWS writes it, continued after `next` (key, id) when given.
inline std::string uploads_page(const std::string& prefix, const std::vector<Listed>& uploads,
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

inline std::string response(const std::string& status, const std::string& body) {
  return "HTTP/1.1 " + status + "\r\nContent-Type: application/xml\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

inline const std::string no_content = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n";
inline const std::string no_such_upload = response(
    "404 Not Found",
    "<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message>"
    "</Error>");

inline bool is_listing(const std::string& method, const std::string& target) {
  return method == "GET" && target.ends_with("&uploads");
}

// The value of parameter `name` in `target`'s query, percent-decoded.
inline std::string parameter(const std::string& target, const std::string& name) {
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
  /// the aborts in aborts_, and leaves other requests to s3rver. As on S3, a part sent for an
  /// aborted upload fails with NoSuchUpload.
  ///
  /// With `deferred`, the upload is removed only by settle(): for tests where a part may still
  /// be forwarded to s3rver when the abort arrives, since s3rver dies (an unhandled ENOENT) when
  /// the directory of a part it is writing disappears.
  Answer abort_emulation(bool deferred = false) {
    return [this, deferred](const std::string& method, const std::string& target) -> std::string {
      static const std::regex upload_id(".*[?&]uploadId=([0-9a-f]+).*");
      std::smatch match;
      if (!std::regex_match(target, match, upload_id)) return {};
      const std::lock_guard lock(aborted_mutex_);
      const std::string id = match[1];
      if (method == "PUT") return aborted_.contains(id) ? no_such_upload : std::string{};
      if (method != "DELETE") return {};
      ++aborts_;
      const bool known = aborted_.insert(id).second && s3rver_->has_upload("models", id);
      if (!deferred && known) s3rver_->remove_upload("models", id);
      return known ? no_content : no_such_upload;
    };
  }

  /// Waits until `proxy` holds no upload, then removes the aborted uploads: those of a deferred
  /// abort_emulation(), and those that parts forwarded before their abort recreated (S3 discards
  /// such parts; s3rver stores them). Fails the test if uploads stay in flight for 30 s.
  void settle(const tensorstream::testing::FaultProxy& proxy) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (proxy.uploads_in_flight() != 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ADD_FAILURE() << proxy.uploads_in_flight() << " uploads still in flight after 30 s";
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const std::lock_guard lock(aborted_mutex_);
    for (const auto& id : aborted_) s3rver_->remove_upload("models", id);
  }

  /// abort_emulation() plus ListMultipartUploads answered from s3rver's storage: one page of
  /// the unfinished uploads of keys starting with the prefix.
  Answer multipart_emulation() {
    return [this, abort = abort_emulation()](const std::string& method,
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
    };
  }

  boost::asio::io_context io_;
  std::atomic<int> aborts_{0};

 private:
  std::mutex aborted_mutex_;
  std::set<std::string> aborted_;
};

}  // namespace tensorstream::s3::testing
