#pragma once
/// @file
/// Writing one object to a store: streamed, bounded in memory, visible only once committed.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <span>
#include <string>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// How ObjectStore::create_writer uploads. s3://, gs:// and az:// use these; file:// streams to
/// disk.
///
/// gs:// sends the parts as the chunks of a resumable upload, one at a time as GCS requires
/// (max_parts_in_flight does not apply), each part_size rounded up to a multiple of 256 KiB;
/// its part_size may be as small as 256 KiB. Such a writer holds at most
/// max(single_put_limit, part_size) bytes.
struct TENSORSTREAM_API WriteOptions {
  /// S3's smallest part (except the last), and the largest of S3 and GCS.
  static constexpr std::size_t min_part_size = std::size_t{5} << 20;
  static constexpr std::size_t max_part_size = std::size_t{5} << 30;

  /// Objects of at most this many bytes go up in one request (S3's PUT, GCS's media upload),
  /// buffered whole; larger ones as a multipart (S3) or resumable (GCS) upload.
  std::size_t single_put_limit = std::size_t{8} << 20;
  /// Bytes of each part of a multipart upload but the last; min_part_size to max_part_size.
  /// S3 allows 10,000 parts, so this also bounds the object: 8 MiB parts reach 78 GiB.
  std::size_t part_size = std::size_t{8} << 20;
  /// Parts uploaded at the same time, at least 1. A writer holds at most
  /// max(single_put_limit, part_size) + part_size × max_parts_in_flight bytes.
  std::size_t max_parts_in_flight = 4;
};

/// One object being written. Obtained from ObjectStore::create_writer.
///
/// Nothing is visible under the object's name until commit() returns; then the whole object is,
/// replacing any earlier one. A writer that fails, is aborted, or is destroyed uncommitted
/// leaves the previous object (or none) in place and removes what it had stored: a file's
/// temporary, an S3 multipart upload's parts, a GCS resumable upload's session.
///
/// Not thread-safe: call one member at a time, each awaited before the next. The writer must
/// not outlive its store, and the store's executor must keep running until the writer is
/// destroyed (an uncommitted S3 or GCS upload is aborted there).
class TENSORSTREAM_API ObjectWriter {
 public:
  /// Aborts an uncommitted object, with a warning in the log: prefer co_await abort().
  virtual ~ObjectWriter() = default;

  /// The URL of the object, as used in messages.
  virtual const std::string& url() const = 0;

  /// Appends `bytes`, which need to stay valid only until the call returns. Suspends while the
  /// writer's buffers are full (backpressure). @throws StorageError naming the object when the
  /// upload failed; the writer is then aborted.
  virtual boost::asio::awaitable<void> write(std::span<const std::byte> bytes) = 0;

  /// Stores what was written and makes it visible under the object's name, atomically.
  /// Called once; afterwards only destruction is allowed. @throws StorageError as write() does.
  virtual boost::asio::awaitable<void> commit() = 0;

  /// Discards what was written and waits until nothing of it remains stored. Does nothing after
  /// commit() or a failure (which aborted already). @throws StorageError when the store
  /// refuses to remove it (e.g. AbortMultipartUpload denied), naming what stays behind.
  virtual boost::asio::awaitable<void> abort() = 0;
};

}  // namespace tensorstream
