#pragma once
/// @file
/// Copying a model's other artifacts (config.json, tokenizer files, generation_config.json, ...)
/// to local disk, for loaders that read them from files while the weights are streamed.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tensorstream/export.hpp"
#include "tensorstream/model/model_files.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace tensorstream {

/// Options of prefetch().
struct PrefetchOptions {
  /// Skip objects named `*.safetensors`, at any depth: the weights are streamed instead.
  bool exclude_safetensors = true;
  /// Range reads in flight at once, over all files: a large file is read by several ranges at
  /// once, small files side by side (see copy_objects()).
  std::size_t max_concurrency = 8;
  /// Bytes per range read. Memory stays below max_concurrency × chunk_size for the reads
  /// whatever the files' sizes, plus the writers' parts for uploads (see copy_objects()).
  std::uint64_t chunk_size = 8ull << 20;
  /// Options of the backends, as for a stream.
  StoreOptions store{};
  /// Skip objects whose key ends in one of these, at any depth (e.g. ".bin" for weights in other
  /// formats).
  std::vector<std::string> exclude_suffixes{};
  /// Copy only objects whose path below the prefix matches one of these shell globs (all when
  /// empty), as fnmatch(3) reads them: `*` also matches '/', so `*.json` takes JSON files at any
  /// depth. Applied after the exclusions above.
  std::vector<std::string> include{};
  /// Leave out objects whose path below the prefix matches one of these globs.
  std::vector<std::string> exclude{};
};

/// What prefetch() copied.
struct PrefetchResult {
  std::vector<std::string> files;  ///< Paths written, relative to the local directory, sorted.
  std::uint64_t bytes = 0;         ///< Their total size.
};

/// Copies every object under the prefix `remote_path` (a trailing '/' is implied) into the
/// directory `local_path`, keeping the relative paths of nested objects and creating directories
/// as needed; the Python original's `prefetch`.
///
/// Zero-byte keys ending in '/' (directory placeholders some tools create) are skipped; zero-byte
/// files are copied. Each file is written under a temporary name in its target directory and
/// renamed into place once complete, so no partial file is ever visible under its own name, and
/// an existing file is replaced whole. On failure the files already copied stay; none is partial.
///
/// From a store that can list (file://, s3://, gs://, az://) every object under the prefix is
/// copied; from one that cannot (http(s)://), the known_artifact_names that are there and,
/// unless `exclude_safetensors`, the weights the index names (else model.safetensors), as a
/// stream finds them. Runs on the awaiting coroutine's executor; the local writes are
/// ordinary blocking writes of at most `chunk_size` bytes on its threads. Throws InvalidArgument
/// for bad options (an empty pattern), NotFoundError for a prefix with nothing under it (`…/:
/// nothing under this prefix`; nothing is created) or nothing that `include` and `exclude` take
/// (`…/: no object under this prefix matches --include '*.gguf'`), StorageError naming the object or file that failed, including an
/// object whose key would land outside `local_path`.
///
/// `local_path` may also be a URL of a store that can write (`file://…`, `s3://bucket/prefix`,
/// `gs://bucket/prefix`): the objects are then written below that prefix through
/// ObjectStore::create_writer, each visible only once complete (see ObjectWriter), and a failed
/// copy stores nothing.
TENSORSTREAM_API
boost::asio::awaitable<PrefetchResult> prefetch(std::string remote_path,
                                                std::filesystem::path local_path,
                                                PrefetchOptions options = {});

/// Copies the objects under the key `prefix` of `source` to `destination_prefix` + their
/// relative paths in `destination` (which must can_write(), else InvalidArgument), through its
/// writers. Both stores must stay alive until it completes. `options.store` is unused.
TENSORSTREAM_API
boost::asio::awaitable<PrefetchResult> prefetch(ObjectStore& source, std::string prefix,
                                                ObjectStore& destination,
                                                std::string destination_prefix,
                                                PrefetchOptions options = {});

/// Like prefetch() above, reading the objects under the key `prefix` (ending in '/') of `store`,
/// which must stay alive until it completes. `options.store` is unused.
TENSORSTREAM_API
boost::asio::awaitable<PrefetchResult> prefetch(ObjectStore& store, std::string prefix,
                                                std::filesystem::path local_path,
                                                PrefetchOptions options = {});

/// Like prefetch(), blocking the calling thread, which runs the I/O.
TENSORSTREAM_API
PrefetchResult prefetch_blocking(std::string remote_path, std::filesystem::path local_path,
                                 PrefetchOptions options = {});

}  // namespace tensorstream
