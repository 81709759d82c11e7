#include "storage/s3/writer.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <algorithm>
#include <utility>

#include "async/uncancellable.hpp"
#include "storage/http/http_client.hpp"
#include "storage/part_uploads.hpp"
#include "storage/s3/multipart_documents.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {

namespace asio = boost::asio;

namespace {

// The target of the requests about upload `id` of the object at `object_target`.
std::string upload_target(const std::string& object_target, const std::string& id) {
  return object_target + "?uploadId=" + uri_encode(id, false);
}

}  // namespace

struct Writer::Upload {
  Upload(std::string id, std::string object_target, std::string url)
      : id(std::move(id)), object_target(std::move(object_target)),
        target(upload_target(this->object_target, this->id)), url(std::move(url)) {}

  const std::string id;
  const std::string object_target;
  const std::string target;  // The object's target with "?uploadId=...".
  const std::string url;
  std::shared_ptr<PartUploads> parts;  // Answered with the parts' ETags.
};

namespace {

// S3 allows at most this many parts.
constexpr std::size_t max_parts = 10'000;
// S3's answers to uploads are short XML documents.
constexpr std::size_t max_answer = 1 << 20;

using Upload = Writer::Upload;

std::span<const std::byte> bytes_of(const std::string& text) {
  return std::as_bytes(std::span<const char>(text));
}

std::string hash_of(std::span<const std::byte> bytes) {
  return payload_hash(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

// Uploads part `number` of `upload`; answers its ETag.
asio::awaitable<std::string> upload_part(std::shared_ptr<HttpClient> client,
                                         std::shared_ptr<const std::string> target,
                                         std::string url, std::size_t number,
                                         std::vector<std::byte> bytes) {
  const std::string part_target = *target + "&partNumber=" + std::to_string(number);
  const std::string sha256 = hash_of(bytes);
  const RequestBody body{"PUT", bytes, sha256};
  TextResponse answer = co_await client->send(part_target, url, max_answer, body);
  if (answer.etag.empty()) {
    throw StorageError(url, "UploadPart " + std::to_string(number) +
                                " was answered without an ETag");
  }
  co_return std::move(answer.etag);
}

// Cancels the parts in flight, waits for them, and removes the upload with its parts.
asio::awaitable<void> abort_upload(std::shared_ptr<HttpClient> client,
                                   std::shared_ptr<Upload> upload) {
  co_await upload->parts->cancel();
  co_await abort_multipart_upload(*client, upload->object_target, upload->url, upload->id);
}

asio::awaitable<void> abort_in_background(std::shared_ptr<HttpClient> client,
                                          std::shared_ptr<Upload> upload) {
  try {
    co_await abort_upload(std::move(client), upload);
  } catch (const std::exception& error) {
    log(LogLevel::warning, error.what());
  }
}

WriteOptions checked(const std::string& url, WriteOptions options) {
  if (options.part_size < WriteOptions::min_part_size ||
      options.part_size > WriteOptions::max_part_size) {
    throw InvalidArgument(url + ": part size " + std::to_string(options.part_size) +
                          " is outside S3's range of 5 MiB to 5 GiB");
  }
  if (options.max_parts_in_flight == 0) {
    throw InvalidArgument(url + ": max_parts_in_flight must be at least 1");
  }
  return options;
}

}  // namespace

asio::awaitable<bool> abort_multipart_upload(HttpClient& client, std::string object_target,
                                             std::string url, std::string id) {
  const std::string target = upload_target(object_target, id);
  const RequestBody body{"DELETE"};
  try {
    co_await client.send(target, url, max_answer, body);
  } catch (const NotFoundError&) {
    co_return false;  // NoSuchUpload: already gone.
  } catch (const StorageError& error) {
    throw StorageError(url, "AbortMultipartUpload failed: " + error.cause() +
                                "; the parts of upload " + id +
                                " stay stored until aborted or removed by a lifecycle rule",
                       error.transient());
  }
  co_return true;
}

Writer::Writer(std::shared_ptr<HttpClient> client, asio::any_io_executor executor,
               std::string target, std::string url, WriteOptions options)
    : UploadWriter(std::move(url)),
      client_(std::move(client)),
      executor_(std::move(executor)),
      target_(std::move(target)),
      options_(checked(url_, options)) {}

Writer::~Writer() {
  if (!is_open()) return;
  if (!upload_) {
    log(LogLevel::warning, url_ + ": writer destroyed before commit; object not written");
    return;
  }
  log(LogLevel::warning, url_ + ": writer destroyed before commit; aborting multipart upload " +
                             upload_->id);
  asio::co_spawn(executor_, abort_in_background(client_, upload_), asio::detached);
}

asio::awaitable<void> Writer::write_or_fail(std::span<const std::byte> bytes) {
  written_ += bytes.size();
  while (!bytes.empty()) {
    const std::size_t limit = upload_ ? options_.part_size : options_.single_put_limit;
    if (buffer_.size() >= limit) {
      // Only reached before multipart starts: the object outgrows one PUT.
      co_await start_multipart();
      continue;
    }
    const auto piece = bytes.first(std::min(bytes.size(), limit - buffer_.size()));
    buffer_.insert(buffer_.end(), piece.begin(), piece.end());
    bytes = bytes.subspan(piece.size());
    if (upload_ && buffer_.size() == options_.part_size) {
      std::vector<std::byte> part = std::exchange(buffer_, {});
      co_await send_part(std::move(part));
    }
  }
}

asio::awaitable<void> Writer::start_multipart() {
  // Retried like every request: should an answer be lost and the retry succeed, the first
  // upload stays unknown to us, as with the AWS SDKs; a bucket lifecycle rule
  // (AbortIncompleteMultipartUpload) removes such uploads. Not cancelled once sent (Ctrl-C), so
  // that the upload it makes is known, and aborted by discard().
  const std::string target = target_ + "?uploads";
  const RequestBody body{"POST"};
  const TextResponse answer =
      co_await async::uncancellable(client_->send(target, url_, max_answer, body));
  std::string id = parse_upload_id(answer.body, url_);
  upload_ = std::make_shared<Upload>(std::move(id), target_, url_);
  upload_->parts = std::make_shared<PartUploads>(
      executor_, options_.max_parts_in_flight,
      [client = client_, target = std::make_shared<const std::string>(upload_->target),
       url = url_](std::size_t number, std::vector<std::byte> bytes) {
        return upload_part(client, target, url, number, std::move(bytes));
      });
  // The buffer holds single_put_limit bytes, which may be several parts.
  std::vector<std::byte> buffered = std::exchange(buffer_, {});
  std::span<const std::byte> rest(buffered);
  while (rest.size() >= options_.part_size) {
    std::vector<std::byte> part(rest.begin(), rest.begin() + options_.part_size);
    rest = rest.subspan(options_.part_size);
    co_await send_part(std::move(part));
  }
  buffer_.assign(rest.begin(), rest.end());
}

asio::awaitable<void> Writer::send_part(std::vector<std::byte> bytes) {
  if (upload_->parts->started() == max_parts) {
    throw StorageError(url_, "the object needs more than S3's " + std::to_string(max_parts) +
                                 " parts of " + std::to_string(options_.part_size) +
                                 " bytes; raise the part size");
  }
  co_await upload_->parts->start(std::move(bytes));
}

asio::awaitable<void> Writer::commit_or_fail() {
  if (!upload_) {
    const std::string sha256 = hash_of(buffer_);
    const RequestBody body{"PUT", buffer_, sha256};
    co_await client_->send(target_, url_, max_answer, body);
    buffer_ = {};
    co_return;
  }
  if (!buffer_.empty()) {
    std::vector<std::byte> part = std::exchange(buffer_, {});
    co_await send_part(std::move(part));
  }
  const std::vector<std::string> etags = co_await upload_->parts->finish();
  const std::string document = complete_multipart_upload_body(etags);
  const std::string sha256 = hash_of(bytes_of(document));
  RequestBody body{"POST", bytes_of(document), sha256};
  body.response_timeout_factor = completion_timeout_factor;
  co_await complete(send_completion(body),
                    [&] { return completed_object(multipart_etag(etags)); });
}

asio::awaitable<void> Writer::send_completion(RequestBody body) {
  const TextResponse answer = co_await client_->send(upload_->target, url_, max_answer, body);
  check_complete_multipart_upload(answer.body, url_);
}

asio::awaitable<std::optional<std::string>> Writer::completed_object(
    std::optional<std::string> etag) {
  ResponseVersion version;
  const std::uint64_t size = co_await client_->content_length(target_, url_, version);
  if (size != written_) co_return std::nullopt;
  // Stores that give multipart objects an ETag of S3's form give this upload's one; others (s3rver
  // gives the MD5 of the whole object) leave the size to tell.
  const bool multipart_form = version.etag.find('-') != std::string::npos;
  if (multipart_form && version.etag != etag) co_return std::nullopt;
  co_return std::to_string(size) + " bytes, ETag " + version.etag;
}

asio::awaitable<void> Writer::discard() {
  buffer_ = {};
  if (upload_) co_await abort_upload(client_, upload_);
}

}  // namespace tensorstream::s3
