#pragma once
/// @file
/// The object store abstraction every backend (file, http, s3, gs) implements.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/object_version.hpp"
#include "tensorstream/storage/object_writer.hpp"

namespace tensorstream {

/// One object found by ObjectStore::list.
struct ObjectInfo {
  std::string key;          ///< Key to pass to size() or read_range().
  std::uint64_t size = 0;   ///< Size in bytes.
};

/// What ObjectStore::stat tells of one object.
struct ObjectStat {
  std::uint64_t size = 0;  ///< Size in bytes.
  /// The version the store pinned. Two stats of one object have equal versions exactly when they
  /// saw the same version. Empty when the store knows none (a server that sends neither ETag nor
  /// Last-Modified, a store that does not override stat()).
  ObjectVersion version{};
};

/// How deep ObjectStore::list looks under its prefix.
enum class ListDepth {
  one_level,  ///< Objects directly under the prefix, as a directory listing shows them.
  recursive,  ///< Every object whose key starts with the prefix, at any depth.
};

/// What lies directly under a prefix, as a directory listing (or `aws s3 ls`) shows it.
struct Listing {
  std::vector<ObjectInfo> objects;    ///< Objects directly under the prefix, sorted by key.
  std::vector<std::string> prefixes;  ///< Keys ending in '/' that hold the rest, sorted.
};

/// Counters a store keeps about its own work; a snapshot, safe to copy.
struct StoreStats {
  std::uint64_t requests = 0;   ///< Range reads, size and list requests issued.
  /// Payload bytes delivered into destinations. Network stores count them as they arrive, read
  /// by read (also those of a read that fails later); files count each read_range() once done.
  std::uint64_t bytes = 0;
  /// Of those, bytes a file store read with direct I/O, past the page cache.
  std::uint64_t direct_bytes = 0;
  /// Of those, bytes read from a local cache (CachedStore) rather than from the source.
  std::uint64_t cached_bytes = 0;
  std::uint64_t retries = 0;    ///< Requests repeated after a transient failure.
  std::uint64_t connections = 0;///< Connections opened (network stores).
  std::uint64_t tls_resumed = 0;///< Of those, TLS connections that resumed an earlier session.
  std::string io_mode;  ///< How bytes are read: "io_uring", "pread (...why...)", "http", "https".
  /// Of the requests waiting for their server (network stores), the one that has waited
  /// longest: what for ("a response from HOST", "a connection to HOST") and for how many
  /// seconds so far; empty and 0 while none waits. Body bytes end a request's wait.
  std::string waiting_for{};
  double waiting_seconds = 0;
};

/// One upload of a writer that never finished, removed by ObjectStore::abort_stale_uploads.
struct StaleUpload {
  /// The object it was writing, as read_range() takes keys: "/llama/model.safetensors". For a
  /// file whose name is longer than 200 bytes, the first 200 bytes of the name.
  std::string key;
  /// What was removed: the multipart upload's id (s3://) or the temporary's path (file://).
  std::string upload;
  /// When the upload was initiated (s3://) or the temporary last written (file://).
  std::chrono::system_clock::time_point started;
};

/// What ObjectStore::abort_stale_uploads found.
struct StaleUploads {
  std::vector<StaleUpload> removed;  ///< Removed, sorted by key, then upload.
  std::size_t kept = 0;  ///< Found but more recent than `older_than`, and left alone.
};

/// A flat namespace of objects that can be read by byte range.
///
/// Keys are the paths of the backend: absolute file paths for file://, URL paths for http(s)://.
/// Every member may be called concurrently from coroutines on the store's executor, also when
/// several threads run that executor's io_context. Failures throw StorageError (NotFoundError for
/// a missing object) naming the object's URL.
///
/// A store pins each object at its first access (size() or read_range()) to the version it saw
/// then, for the store's lifetime: HTTP and S3 to the ETag (else Last-Modified) of the first
/// response, GCS to the object's generation, files to their inode, size and modification time.
/// Every later read is conditional on that version (If-Match or If-Unmodified-Since,
/// ifGenerationMatch, a re-stat of the file after the read), so bytes of two versions are never
/// mixed: an object that changed throws a permanent StorageError, e.g.
/// `URL: the object changed while it was being read (ETag "a" became "b"); restart the stream`.
/// To read the new version, use a new store. list() pins nothing.
///
/// Stores that can_write() create objects through create_writer(); reads of an object written
/// while the store has it pinned fail as a change, so read new objects with a new store.
class TENSORSTREAM_API ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  /// The URL of `key`, as used in messages.
  virtual std::string url(const std::string& key) const = 0;

  /// What names the object `key` apart from every other store's, for a cache shared by them:
  /// url(key) unless the URL leaves out where the object lives (an az:// URL names no storage
  /// account), then the full address.
  virtual std::string object_identity(const std::string& key) const { return url(key); }

  /// Size of the object in bytes.
  virtual boost::asio::awaitable<std::uint64_t> size(std::string key) = 0;

  /// Size and version of the object, pinning it as size() does. Asks the server only when the
  /// store has not read the object yet (or read it without learning its size), so a stat after a
  /// read costs nothing. The default calls size() and knows no version, so a CachedStore over
  /// the store keeps none of its objects: a store of a scheme of its own that can tell versions
  /// apart overrides it and names them with ObjectVersion::other.
  virtual boost::asio::awaitable<ObjectStat> stat(std::string key);

  /// Whether list() is supported (plain HTTP has no listing).
  virtual bool can_list() const = 0;

  /// The objects under `prefix` (which ends with '/'), sorted by key. Object stores may return
  /// zero-byte keys ending in '/' that tools create as directory placeholders.
  virtual boost::asio::awaitable<std::vector<ObjectInfo>> list(std::string prefix,
                                                               ListDepth depth) = 0;

  /// The objects directly under `prefix` (which ends with '/') and the prefixes one level down
  /// that hold the others: `/m/a.safetensors` and `/m/TP2/` under `/m/`. Needs can_list(). The
  /// default lists recursively and groups the deeper keys; stores whose service groups keys by
  /// '/' itself (S3, GCS, directories) override it with one listing.
  virtual boost::asio::awaitable<Listing> list_level(std::string prefix);

  /// Reads exactly `destination.size()` bytes starting at `offset` into `destination`.
  /// Bytes land directly in the caller's memory; a short object is an error, never a short read.
  virtual boost::asio::awaitable<void> read_range(std::string key, std::uint64_t offset,
                                                  std::span<std::byte> destination) = 0;

  /// The alignment reads of `key` are fastest into: a destination whose address is congruent to
  /// its offset modulo this power of two takes the bytes in place with no copy in between (a
  /// file read with direct I/O); any other destination takes them as well. 0, the default, when
  /// no address is better than another. Opens the object where the store must (a file, on the
  /// calling thread); a missing object gives 0, leaving the error to the read.
  virtual std::size_t memory_alignment(const std::string& key);

  /// The smallest range worth one request of this store, for streams whose chunk size nothing
  /// chose (neither StreamerOptions::chunk_size nor the environment): their default is raised
  /// to it. Stores whose service spends much on every request say so here (az://); 0, the
  /// default, where any chunk size serves.
  virtual std::uint64_t preferred_read_size() const { return 0; }

  /// Whether create_writer() is supported: file://, s3://, gs:// and az:// yes, http(s):// and hf:// no.
  virtual bool can_write() const { return false; }

  /// A writer that creates (or replaces) the object `key`, a key as read_range() takes it, e.g.
  /// "/prefix/model.safetensors" for s3://bucket/prefix/model.safetensors. Nothing is stored
  /// before the first write; see ObjectWriter for what becomes visible when.
  /// @throws InvalidArgument naming the object's URL when the store cannot write or `options`
  ///   are out of range; StorageError when the writer cannot be set up (a file's directory).
  virtual std::unique_ptr<ObjectWriter> create_writer(std::string key,
                                                      WriteOptions options = {});

  /// Removes what writers that never got to commit() or abort() left under `prefix`, at any
  /// depth: a process killed by SIGKILL, a crash or a lost machine leaves a temporary file
  /// (file://) or an unfinished multipart upload (s3://), whose parts are no object anyone sees
  /// but are stored and billed. Returns what it removed and how many it kept.
  ///
  ///  - file:// removes the writers' hidden temporaries `.<name>.tensorstream-<pid>-<random>.tmp`
  ///    (those of FileStore::create_writer, `prefetch` and `shard` alike), not following links
  ///    to directories; `started` is their modification time.
  ///  - s3:// lists the bucket's multipart uploads whose keys start with the prefix
  ///    (ListMultipartUploads, every page) and aborts each (AbortMultipartUpload) before listing
  ///    the next page; `started` is its Initiated time. An upload that is gone by the time it is
  ///    aborted (completed or aborted by someone else: NoSuchUpload) is skipped.
  ///  - The other stores have no writers; this returns an empty result.
  ///
  /// Uploads started less than `older_than` ago are kept, as they may belong to writers still
  /// at work (a file's temporary counts from its last write, so a writer that writes more often
  /// than that is safe); with a zero `older_than` everything found is removed, so give zero only
  /// when no other writer is at work under the prefix: a writer whose upload is removed fails at
  /// its next write or at commit(). A prefix with nothing under it, or a directory that does not
  /// exist, is no error.
  ///
  ///     // Before writing a new checkpoint under /llama/ of a bucket (arguments bound to named
  ///     // locals: GCC 12 mishandles temporaries in a co_await expression):
  ///     const std::string prefix = "/llama/";
  ///     const auto day = std::chrono::hours(24);
  ///     StaleUploads stale = co_await store.abort_stale_uploads(prefix, day);
  ///
  /// @param prefix a key starting and ending with '/' as list() takes it: a directory path for
  ///   file://, "/" for a whole bucket.
  /// @throws InvalidArgument naming the prefix's URL for a prefix of another form; StorageError
  ///   when the listing fails or an abort or removal is refused, naming the upload that stays
  ///   (what was removed before that stays removed).
  virtual boost::asio::awaitable<StaleUploads> abort_stale_uploads(
      std::string prefix, std::chrono::system_clock::duration older_than);

  /// A snapshot of the store's counters.
  virtual StoreStats stats() const = 0;
};

}  // namespace tensorstream
