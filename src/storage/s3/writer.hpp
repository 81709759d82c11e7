#pragma once
// The s3:// ObjectWriter: one PUT for small objects, a bounded concurrent multipart upload for
// large ones, aborted whenever it does not complete.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/http/text_request.hpp"
#include "storage/upload_writer.hpp"

namespace tensorstream {

class HttpClient;

namespace s3 {

/// Sends AbortMultipartUpload for the upload `id` of the object at request target
/// `object_target` (bucket prefix and URI-encoded key) through `client`, which must stay alive
/// until it completes. Returns false when S3 no longer knows the upload (NoSuchUpload: it was
/// completed or aborted meanwhile). Throws StorageError naming `url` and the upload whose parts
/// stay stored when the abort is refused.
boost::asio::awaitable<bool> abort_multipart_upload(HttpClient& client, std::string object_target,
                                                    std::string url, std::string id);

/// Writes one object of an S3 bucket.
///
/// Bytes are buffered up to options.single_put_limit. An object that stays within it is sent
/// by commit() as one PUT. Beyond it, a multipart upload starts (CreateMultipartUpload) and the
/// bytes go up as parts of options.part_size, at most options.max_parts_in_flight at a time;
/// write() waits while that many are in flight. Every request is signed with the SHA-256 of
/// its body and retried by the HttpClient like reads. commit() sends the last part and
/// CompleteMultipartUpload, which may wait completion_timeout_factor times the response timeout
/// for its answer; should it fail (its answer lost, and the retries refused), a HEAD decides:
/// an object of the size written, with this upload's multipart ETag where the store gives one,
/// is a success. A failure anywhere, abort(), or destruction cancels the parts in
/// flight and sends AbortMultipartUpload, so no parts stay stored.
class Writer final : public UploadWriter {
 public:
  /// Writes the object at request target `target` (bucket prefix and URI-encoded key) through
  /// `client`; part uploads run on a strand of `executor`. Throws InvalidArgument naming `url`
  /// for options out of range.
  Writer(std::shared_ptr<HttpClient> client, boost::asio::any_io_executor executor,
         std::string target, std::string url, WriteOptions options);
  ~Writer() override;

  /// The state a multipart upload shares with its part uploads, which may outlive the writer.
  struct Upload;

 private:
  boost::asio::awaitable<void> write_or_fail(std::span<const std::byte> bytes) override;
  boost::asio::awaitable<void> commit_or_fail() override;
  // Cancels the parts in flight and aborts the multipart upload, if one was started.
  boost::asio::awaitable<void> discard() override;
  boost::asio::awaitable<void> start_multipart();
  // Waits for room, then uploads `bytes` as the next part in the background.
  boost::asio::awaitable<void> send_part(std::vector<std::byte> bytes);
  // Sends CompleteMultipartUpload; throws for an <Error> in its answer too.
  boost::asio::awaitable<void> send_completion(RequestBody body);
  // What the object is now when it is the one uploaded: written_ bytes and, where the store
  // gives multipart objects an ETag of S3's form, `etag`.
  boost::asio::awaitable<std::optional<std::string>> completed_object(
      std::optional<std::string> etag);

  std::shared_ptr<HttpClient> client_;
  boost::asio::any_io_executor executor_;
  std::string target_;
  WriteOptions options_;
  std::vector<std::byte> buffer_;
  std::uint64_t written_ = 0;  // Bytes given to write().
  std::shared_ptr<Upload> upload_;  // Null until the object outgrows one PUT.
};

}  // namespace s3
}  // namespace tensorstream
