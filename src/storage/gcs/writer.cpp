#include "storage/gcs/writer.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <algorithm>
#include <array>
#include <charconv>
#include <utility>

#include "storage/gcs/json_api.hpp"
#include "storage/http/http_client.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "storage/s3/sigv4.hpp"
#include "tensorstream/storage/url.hpp"

namespace tensorstream::gcs {

namespace asio = boost::asio;

namespace {

// Answers to uploads are object resources or JSON errors, a few KiB.
constexpr std::size_t max_answer = 1 << 20;
// A chunk is answered 308 Resume Incomplete until the last, which creates the object (200, or
// 201 as some front ends say).
constexpr std::array<unsigned, 2> chunk_answers{201, 308};
// GCS answers a cancelled session with 499 Client Closed Request.
constexpr std::array<unsigned, 1> cancel_answers{499};

std::string upload_target(const UploadTarget& target, std::string_view type) {
  return target.objects + "?uploadType=" + std::string(type) +
         "&name=" + s3::uri_encode(target.name, false);
}

// The byte count a Range header of a 308 answer says was persisted: "bytes=0-N" is N + 1, no
// header none.
std::optional<std::uint64_t> persisted_bytes(std::string_view range) {
  if (range.empty()) return 0;
  constexpr std::string_view prefix = "bytes=0-";
  if (!range.starts_with(prefix)) return std::nullopt;
  range.remove_prefix(prefix.size());
  std::uint64_t last = 0;
  const auto [end, ec] = std::from_chars(range.data(), range.data() + range.size(), last);
  if (range.empty() || ec != std::errc{} || end != range.data() + range.size()) {
    return std::nullopt;
  }
  return last + 1;
}

// Cancels the session so that GCS discards what it persisted. A session that is gone already
// (404) needs nothing more.
asio::awaitable<void> cancel_session(std::shared_ptr<HttpClient> client, std::string session,
                                     std::string url) {
  RequestBody body{"DELETE"};
  body.also_accepted = cancel_answers;
  try {
    co_await client->send(session, url, max_answer, body);
  } catch (const NotFoundError&) {
  } catch (const StorageError& error) {
    throw StorageError(url, "cancelling the resumable upload failed: " + error.cause() +
                                "; GCS discards its bytes when the session expires after a week",
                       error.transient());
  }
}

asio::awaitable<void> cancel_in_background(std::shared_ptr<HttpClient> client,
                                           std::string session, std::string url) {
  try {
    co_await cancel_session(std::move(client), std::move(session), std::move(url));
  } catch (const std::exception& error) {
    log(LogLevel::warning, error.what());
  }
}

// The Content-Range line of `range` ("a-b", or "*" for none) of an upload that ends at `end`
// when it is the `last` request, else of unknown size.
std::string content_range(const std::string& range, std::uint64_t end, bool last) {
  std::string line = "Content-Range: bytes ";
  line += range;
  line += '/';
  line += last ? std::to_string(end) : std::string("*");
  line += "\r\n";
  return line;
}

// part_size rounded up to the 256 KiB that GCS requires of every chunk but the last.
std::size_t chunk_size(const std::string& url, const WriteOptions& options) {
  if (options.part_size < chunk_granularity || options.part_size > WriteOptions::max_part_size) {
    throw InvalidArgument(url + ": part size " + std::to_string(options.part_size) +
                          " is outside GCS's range of 256 KiB to 5 GiB");
  }
  return (options.part_size + chunk_granularity - 1) / chunk_granularity * chunk_granularity;
}

}  // namespace

std::string upload_objects_target(std::string_view bucket) {
  return "/upload/storage/v1/b/" + s3::uri_encode(bucket, false) + "/o";
}

Writer::Writer(std::shared_ptr<HttpClient> client, asio::any_io_executor executor,
               UploadTarget target, std::string url, WriteOptions options)
    : UploadWriter(std::move(url)),
      client_(std::move(client)),
      executor_(std::move(executor)),
      target_(std::move(target)),
      options_(options),
      chunk_size_(chunk_size(url_, options)) {}

Writer::~Writer() {
  if (!is_open()) return;
  if (session_.empty()) {
    log(LogLevel::warning, url_ + ": writer destroyed before commit; object not written");
    return;
  }
  log(LogLevel::warning,
      url_ + ": writer destroyed before commit; cancelling the resumable upload");
  asio::co_spawn(executor_, cancel_in_background(client_, session_, url_), asio::detached);
}

asio::awaitable<void> Writer::write_or_fail(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    const std::size_t limit = session_.empty() ? options_.single_put_limit : chunk_size_;
    // A full buffer is sent only once more bytes arrive, so the last chunk is never empty.
    if (buffer_.size() >= limit) {
      if (session_.empty()) {
        co_await start_resumable();
      } else {
        co_await send_until(buffer_offset_ + buffer_.size(), false);
        buffer_offset_ += buffer_.size();
        buffer_.clear();
      }
      continue;
    }
    const auto piece = bytes.first(std::min(bytes.size(), limit - buffer_.size()));
    buffer_.insert(buffer_.end(), piece.begin(), piece.end());
    bytes = bytes.subspan(piece.size());
  }
}

asio::awaitable<void> Writer::start_resumable() {
  // Retried like every request: should an answer be lost and the retry succeed, the first
  // session stays unknown to us; it holds no object and expires after a week.
  earlier_generation_ = co_await generation();
  const std::string target = upload_target(target_, "resumable");
  RequestBody body{"POST"};
  body.headers = "X-Upload-Content-Type: application/octet-stream\r\n";
  const TextResponse answer = co_await client_->send(target, url_, max_answer, body);
  if (answer.location.empty()) {
    throw StorageError(url_, "GCS started the resumable upload without a session URI (no "
                             "Location header)");
  }
  if (answer.location.starts_with('/')) {
    session_ = answer.location;
  } else {
    const Url session = Url::parse(answer.location);
    if (session.origin() != target_.origin) {
      throw StorageError(url_, "the session URI " + answer.location + " is not on " +
                                   target_.origin);
    }
    session_ = session.path + (session.query.empty() ? "" : "?" + session.query);
  }
  // The buffer holds single_put_limit bytes, which may be several chunks; more bytes follow, so
  // every full one can go.
  const std::size_t full = buffer_.size() / chunk_size_ * chunk_size_;
  for (std::size_t sent = chunk_size_; sent <= full; sent += chunk_size_) {
    co_await send_until(buffer_offset_ + sent, false);
  }
  buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(full));
  buffer_offset_ += full;
}

RequestBody Writer::chunk_request(std::uint64_t end, bool last) {
  const auto from = static_cast<std::size_t>(persisted_ - buffer_offset_);
  const auto to = static_cast<std::size_t>(end - buffer_offset_);
  const auto bytes = std::span<const std::byte>(buffer_).subspan(from, to - from);
  // An empty request asks how much GCS persisted; with the size, it also completes the upload
  // once GCS has every byte.
  content_range_ = content_range(
      bytes.empty() ? std::string("*") : std::to_string(persisted_) + "-" + std::to_string(end - 1),
      end, last);
  RequestBody body{"PUT", bytes};
  body.headers = content_range_;
  body.also_accepted = chunk_answers;
  if (last) body.response_timeout_factor = completion_timeout_factor;
  body.before_repeat = [this, end, last] { return resume_request(end, last); };
  return body;
}

asio::awaitable<RequestBody> Writer::resume_request(std::uint64_t end, bool last) {
  const std::string query = content_range("*", end, last);
  RequestBody body{"PUT"};
  body.headers = query;
  body.also_accepted = chunk_answers;
  // With the size, the query completes the upload when GCS has every byte.
  if (last) body.response_timeout_factor = completion_timeout_factor;
  const TextResponse answer = co_await client_->send(session_, url_, max_answer, body);
  if (answer.status == 308) {
    take_persisted(answer.range, end);
  } else if (last) {
    persisted_ = end;
  } else {
    throw StorageError(url_, "GCS completed the resumable upload at " +
                                 std::to_string(persisted_) + " bytes, before its last chunk");
  }
  co_return chunk_request(end, last);
}

void Writer::take_persisted(const std::string& range, std::uint64_t end) {
  const auto persisted = persisted_bytes(range);
  if (!persisted) {
    throw StorageError(url_, "GCS answered a chunk with the malformed Range \"" + range + "\"");
  }
  if (*persisted < buffer_offset_ || *persisted > end) {
    throw StorageError(url_, "GCS says it persisted " + std::to_string(*persisted) +
                                 " bytes of the resumable upload, but " +
                                 std::to_string(buffer_offset_) + " to " + std::to_string(end) +
                                 " were expected; the upload cannot resume");
  }
  persisted_ = *persisted;
}

asio::awaitable<void> Writer::send_until(std::uint64_t end, bool last) {
  for (;;) {
    const std::uint64_t before = persisted_;
    const RequestBody body = chunk_request(end, last);
    const bool empty = body.bytes.empty();
    const TextResponse answer = co_await client_->send(session_, url_, max_answer, body);
    if (answer.status != 308) {
      if (!last) {
        throw StorageError(url_, "GCS completed the resumable upload before its last chunk");
      }
      persisted_ = end;
      co_return;
    }
    take_persisted(answer.range, end);
    if (!last && persisted_ == end) co_return;
    // GCS may persist less than a request sent; the rest goes again, as long as that helps.
    if (persisted_ <= before) {
      throw StorageError(url_, empty ? "GCS did not complete the upload of all " +
                                           std::to_string(end) + " bytes"
                                     : "GCS persisted none of the " +
                                           std::to_string(end - before) + " bytes sent at " +
                                           "offset " + std::to_string(before));
    }
  }
}

asio::awaitable<void> Writer::commit_or_fail() {
  if (session_.empty()) {
    const std::string target = upload_target(target_, "media");
    RequestBody body{"POST", buffer_};
    body.headers = "Content-Type: application/octet-stream\r\n";
    co_await client_->send(target, url_, max_answer, body);
  } else {
    const std::uint64_t size = buffer_offset_ + buffer_.size();
    co_await complete(send_until(size, true), [this, size] { return created_object(size); });
  }
  buffer_ = {};
}

asio::awaitable<std::optional<std::string>> Writer::generation() {
  try {
    const std::string answer = co_await client_->get_text(target_.metadata, url_, max_answer);
    co_return parse_object_metadata(answer, url_).generation;
  } catch (const NotFoundError&) {
    co_return std::string();
  } catch (const Error& error) {
    // A credential that may create objects but not read them, say: the upload goes on, and a
    // failed completion cannot be checked.
    log(LogLevel::debug, std::string(error.what()) +
                             "; a completion whose answer is lost cannot be checked");
    co_return std::nullopt;
  }
}

asio::awaitable<std::optional<std::string>> Writer::created_object(std::uint64_t size) {
  if (!earlier_generation_) co_return std::nullopt;
  const std::string answer = co_await client_->get_text(target_.metadata, url_, max_answer);
  const ObjectMetadata object = parse_object_metadata(answer, url_);
  if (object.size != size || object.generation.empty() ||
      object.generation == *earlier_generation_) {
    co_return std::nullopt;
  }
  co_return std::to_string(size) + " bytes, generation " + object.generation;
}

asio::awaitable<void> Writer::discard() {
  buffer_ = {};
  if (!session_.empty()) co_await cancel_session(client_, session_, url_);
}

}  // namespace tensorstream::gcs
