#pragma once
// The az:// ObjectWriter: one Put Blob for small objects, else blocks uploaded concurrently and
// committed together by Put Block List.

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
class PartUploads;

namespace azure {

/// Writes one block blob.
///
/// Bytes are buffered up to options.single_put_limit. An object that stays within it is sent by
/// commit() as one Put Blob. Beyond it, the bytes go up as uncommitted blocks of options.part_size
/// (Put Block), at most options.max_parts_in_flight at a time; write() waits while that many are in
/// flight. commit() sends the last block and Put Block List, which makes the blob visible at once;
/// it may wait completion_timeout_factor times the response timeout for its answer, and should it
/// fail (its answer lost, and the retries refused), the blob's committed block list decides:
/// exactly this writer's blocks are a success. Every request is retried by the HttpClient like
/// reads. A failure, abort() or destruction cancels the blocks in flight; uncommitted blocks are
/// never visible and Azure discards them within a week (there is no request that deletes them).
class Writer final : public UploadWriter {
 public:
  /// Writes the blob at request target `target` (endpoint path, container and encoded name)
  /// through `client`; block uploads run on a strand of `executor`. Throws InvalidArgument
  /// naming `url` for options out of range.
  Writer(std::shared_ptr<HttpClient> client, boost::asio::any_io_executor executor,
         std::string target, std::string url, WriteOptions options);
  ~Writer() override;

 private:
  boost::asio::awaitable<void> write_or_fail(std::span<const std::byte> bytes) override;
  boost::asio::awaitable<void> commit_or_fail() override;
  boost::asio::awaitable<void> discard() override;
  // Starts the upload of `bytes` as the next block, waiting for room.
  boost::asio::awaitable<void> send_block(std::vector<std::byte> bytes);
  boost::asio::awaitable<void> send_block_list(std::string target, RequestBody body);
  // What the blob is now when it was committed from the blocks `ids`, written_ bytes in all.
  boost::asio::awaitable<std::optional<std::string>> committed_blob(
      const std::vector<std::string>& ids);

  std::shared_ptr<HttpClient> client_;
  boost::asio::any_io_executor executor_;
  std::string target_;
  WriteOptions options_;
  // Distinguishes this writer's blocks from those of another writing the same blob at once.
  std::string block_prefix_;
  std::vector<std::byte> buffer_;
  std::uint64_t written_ = 0;  // Bytes given to write().
  std::shared_ptr<PartUploads> blocks_;  // Null until the object outgrows one Put Blob.
};

}  // namespace azure
}  // namespace tensorstream
