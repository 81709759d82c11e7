#include "storage/s3/writer.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "storage/http/http_client.hpp"
#include "storage/s3/multipart_documents.hpp"
#include "tensorstream/async/condition_variable.hpp"
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
  Upload(asio::any_io_executor executor, std::string id, std::string object_target,
         std::string url)
      : id(std::move(id)), object_target(std::move(object_target)),
        target(upload_target(this->object_target, this->id)), url(std::move(url)),
        strand(asio::make_strand(std::move(executor))) {}

  const std::string id;
  const std::string object_target;
  const std::string target;  // The object's target with "?uploadId=...".
  const std::string url;
  asio::strand<asio::any_io_executor> strand;  // Where the part uploads run.

  std::mutex mutex;
  async::ConditionVariable changed;  // Notified when a part upload ends.
  // Guarded by `mutex`:
  std::size_t in_flight = 0;
  std::vector<std::string> etags;  // Of parts 1, 2, ...; empty while a part is in flight.
  std::exception_ptr error;        // The first part upload's failure.
  std::map<std::size_t, std::shared_ptr<asio::cancellation_signal>> cancels;  // Of parts in flight.
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

asio::awaitable<void> wait_until_parts_done(Upload& upload) {
  std::unique_lock lock(upload.mutex);
  co_await upload.changed.wait(lock, [&] { return upload.in_flight == 0; });
}

asio::awaitable<void> upload_part(std::shared_ptr<HttpClient> client,
                                  std::shared_ptr<Upload> upload, std::size_t number,
                                  std::vector<std::byte> bytes, std::string sha256) {
  std::exception_ptr error;
  std::string etag;
  try {
    const std::string target = upload->target + "&partNumber=" + std::to_string(number);
    const RequestBody body{"PUT", bytes, sha256};
    TextResponse answer = co_await client->send(target, upload->url, max_answer, body);
    if (answer.etag.empty()) {
      throw StorageError(upload->url, "UploadPart " + std::to_string(number) +
                                          " was answered without an ETag");
    }
    etag = std::move(answer.etag);
  } catch (...) {
    error = std::current_exception();
  }
  {
    const std::lock_guard lock(upload->mutex);
    if (error && !upload->error) upload->error = error;
    if (!error) upload->etags[number - 1] = std::move(etag);
    upload->cancels.erase(number);
    --upload->in_flight;
  }
  upload->changed.notify_all();
}

// Cancels the part uploads in flight, on the strand where they run, as Asio requires.
void cancel_parts(const std::shared_ptr<Upload>& upload) {
  asio::post(upload->strand, [upload] {
    std::vector<std::shared_ptr<asio::cancellation_signal>> signals;
    {
      const std::lock_guard lock(upload->mutex);
      for (const auto& [number, signal] : upload->cancels) signals.push_back(signal);
    }
    for (const auto& signal : signals) signal->emit(asio::cancellation_type::terminal);
  });
}

// Cancels the parts in flight, waits for them, and removes the upload with its parts.
asio::awaitable<void> abort_upload(std::shared_ptr<HttpClient> client,
                                   std::shared_ptr<Upload> upload) {
  cancel_parts(upload);
  co_await wait_until_parts_done(*upload);
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
  // (AbortIncompleteMultipartUpload) removes such uploads.
  const std::string target = target_ + "?uploads";
  const RequestBody body{"POST"};
  const TextResponse answer = co_await client_->send(target, url_, max_answer, body);
  std::string id = parse_upload_id(answer.body, url_);
  upload_ = std::make_shared<Upload>(executor_, std::move(id), target_, url_);
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
  {
    std::unique_lock lock(upload_->mutex);
    co_await upload_->changed.wait(lock, [&] {
      return upload_->in_flight < options_.max_parts_in_flight || upload_->error;
    });
    if (upload_->error) std::rethrow_exception(upload_->error);
  }
  std::string sha256 = hash_of(bytes);
  const std::lock_guard lock(upload_->mutex);
  if (upload_->etags.size() == max_parts) {
    throw StorageError(url_, "the object needs more than S3's " + std::to_string(max_parts) +
                                 " parts of " + std::to_string(options_.part_size) +
                                 " bytes; raise the part size");
  }
  upload_->etags.emplace_back();
  const std::size_t number = upload_->etags.size();
  auto signal = std::make_shared<asio::cancellation_signal>();
  upload_->cancels.emplace(number, signal);
  ++upload_->in_flight;
  asio::co_spawn(upload_->strand,
                 upload_part(client_, upload_, number, std::move(bytes), std::move(sha256)),
                 asio::bind_cancellation_slot(signal->slot(), asio::detached));
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
  co_await wait_until_parts_done(*upload_);
  std::string document;
  {
    const std::lock_guard lock(upload_->mutex);
    if (upload_->error) std::rethrow_exception(upload_->error);
    document = complete_multipart_upload_body(upload_->etags);
  }
  const std::string sha256 = hash_of(bytes_of(document));
  const RequestBody body{"POST", bytes_of(document), sha256};
  const TextResponse answer = co_await client_->send(upload_->target, url_, max_answer, body);
  check_complete_multipart_upload(answer.body, url_);
}

asio::awaitable<void> Writer::discard() {
  buffer_ = {};
  if (upload_) co_await abort_upload(client_, upload_);
}

}  // namespace tensorstream::s3
