#pragma once
/// @file
/// Copying objects from one store to another: parallel range reads, writes streamed in order,
/// bounded memory, nothing visible under a name until that object is complete.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/object_store.hpp"

namespace tensorstream {

/// One object for copy_objects() to copy.
struct ObjectCopy {
  std::string key;              ///< Its key in the source, as read_range() takes it.
  std::uint64_t size = 0;       ///< Its size, as list() or stat() reported it.
  std::string destination_key;  ///< The key to create in the destination.
};

/// Options of copy_objects().
struct CopyOptions {
  /// Range reads in flight at once, over all objects together: a large object is read by several
  /// ranges at once, small objects side by side. At least 1.
  std::size_t max_concurrency = 8;
  /// Bytes per range read, at least 1. Multipart uploads (s3://, gs://, az://) use it as their part
  /// size, raised to WriteOptions::min_part_size where smaller.
  std::uint64_t chunk_size = std::uint64_t{16} << 20;
  /// Parts each object's upload sends at once (WriteOptions::max_parts_in_flight), at least 1.
  std::size_t parts_in_flight_per_object = 2;
  /// Called on the copy's strand after every chunk written, with the bytes written so far over
  /// all objects. Must not throw.
  std::function<void(std::uint64_t bytes_written)> on_progress{};
  /// Called on the copy's strand when an object is committed, visible in the destination.
  /// Must not throw.
  std::function<void(const ObjectCopy& copied)> on_object_copied{};
};

/// Copies every object of `copies` from `source` to `destination` (which must can_write(), else
/// InvalidArgument), reading them in the order of `copies`, and returns when all are committed.
///
/// Each object is read in ranges of `chunk_size` bytes, up to `max_concurrency` of them in flight
/// over all objects, and written to its ObjectWriter in order, so an object is visible under its
/// destination key only once complete (see ObjectWriter). Memory stays below
/// max_concurrency × chunk_size for the reads, plus, for uploads, the writers' parts: at most
/// max_concurrency writers are open, each holding at most (1 + parts_in_flight_per_object) parts.
///
/// Every object is pinned to the version its first read saw, as ObjectStore describes; one whose
/// size is no longer the one in `copies` (rewritten since it was listed) throws a permanent
/// StorageError naming it. The first failure stops the copy: the objects being written are
/// aborted (nothing of them stays), those committed before stay, and the error is rethrown.
/// Both stores must stay alive until it completes; runs on the awaiting coroutine's executor,
/// which may have several threads.
TENSORSTREAM_API
boost::asio::awaitable<void> copy_objects(ObjectStore& source, std::vector<ObjectCopy> copies,
                                          ObjectStore& destination, CopyOptions options = {});

}  // namespace tensorstream
