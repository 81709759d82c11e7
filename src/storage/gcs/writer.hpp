#pragma once
// The gs:// ObjectWriter: one media upload for small objects, a resumable upload sent chunk by
// chunk for large ones, cancelled whenever it does not complete.

#include <boost/asio/any_io_executor.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/http/text_request.hpp"
#include "storage/upload_writer.hpp"

namespace tensorstream {

class HttpClient;

namespace gcs {

/// Chunks of a resumable upload but the last are multiples of this many bytes.
inline constexpr std::size_t chunk_granularity = std::size_t{256} << 10;

/// "/upload/storage/v1/b/BUCKET/o", the JSON API's upload path of `bucket`'s objects.
std::string upload_objects_target(std::string_view bucket);

/// Where a Writer sends its requests.
struct UploadTarget {
  /// The endpoint's path prefix (a proxy's), followed by upload_objects_target().
  std::string objects;
  /// The object's name (the key without its leading '/'), not encoded.
  std::string name;
  /// The endpoint's path prefix followed by metadata_target() of the object.
  std::string metadata;
  /// "scheme://host[:port]" of the endpoint, which session URIs must name too.
  std::string origin;
};

/// Writes one object of a Cloud Storage bucket.
///
/// Bytes are buffered up to options.single_put_limit. An object that stays within it is sent by
/// commit() as one media upload (uploadType=media). Beyond it, a resumable upload starts and the
/// bytes go up in chunks of options.part_size rounded up to a multiple of 256 KiB, one at a time,
/// as GCS requires: write() sends a full chunk before it returns, so the writer holds at most
/// max(single_put_limit, chunk) bytes. A chunk's bytes are kept until GCS says it persisted them
/// (the Range of its 308 answer); a chunk that failed is resumed after asking GCS how much it kept,
/// with the HttpClient's retries and backoff. commit() sends the last chunk with the object's size,
/// which creates the object; it may wait completion_timeout_factor times the response timeout for
/// its answer. Should it fail (its answer lost, and the status queries refused), the object's
/// metadata decides: the size written, under a generation other than the one the object had when
/// the session opened, is a success. A failure anywhere, abort(), or destruction cancels the
/// session (DELETE, answered 499), so nothing of it stays stored.
class Writer final : public UploadWriter {
 public:
  /// Writes `target`'s object through `client`; `url` names it in messages. Throws
  /// InvalidArgument naming `url` for options out of range.
  Writer(std::shared_ptr<HttpClient> client, boost::asio::any_io_executor executor,
         UploadTarget target, std::string url, WriteOptions options);
  ~Writer() override;

 private:
  boost::asio::awaitable<void> write_or_fail(std::span<const std::byte> bytes) override;
  boost::asio::awaitable<void> commit_or_fail() override;
  // Cancels the session, if one was opened.
  boost::asio::awaitable<void> discard() override;
  // Opens the resumable session and sends the full chunks buffered so far.
  boost::asio::awaitable<void> start_resumable();
  // Sends the buffered bytes up to object offset `end` until GCS persisted them all; with
  // `last`, `end` is the object's size and the upload completes.
  boost::asio::awaitable<void> send_until(std::uint64_t end, bool last);
  // The request that sends what GCS has not persisted of the bytes up to `end`.
  RequestBody chunk_request(std::uint64_t end, bool last);
  // Asks GCS how much it persisted, then gives chunk_request(end, last).
  boost::asio::awaitable<RequestBody> resume_request(std::uint64_t end, bool last);
  // Takes the Range header of a 308 answer as the bytes persisted.
  void take_persisted(const std::string& range, std::uint64_t end);
  // The object's generation now: empty for none, nullopt when it cannot be read.
  boost::asio::awaitable<std::optional<std::string>> generation();
  // What the object is now when the session created it: `size` bytes, a generation it did
  // not have when the session opened.
  boost::asio::awaitable<std::optional<std::string>> created_object(std::uint64_t size);

  std::shared_ptr<HttpClient> client_;
  boost::asio::any_io_executor executor_;
  UploadTarget target_;
  WriteOptions options_;
  std::size_t chunk_size_;
  std::vector<std::byte> buffer_;
  std::uint64_t buffer_offset_ = 0;  // The object offset of buffer_'s first byte.
  std::string session_;              // Target of the resumable session; empty before.
  std::uint64_t persisted_ = 0;      // Bytes GCS has persisted, from its last answer.
  std::string content_range_;        // The header line of the chunk request in flight.
  // The object's generation when the session opened: empty for none, nullopt when unknown.
  std::optional<std::string> earlier_generation_;
};

}  // namespace gcs
}  // namespace tensorstream
