#pragma once

#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensorstream/safetensors/header.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/streaming/resolve_url.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::detail {

/// One object a stream reads and its validated header: a safetensors file, or a TRAW object
/// described as a header with one tensor whose data starts after the TRAW header.
struct SourceFile {
  std::string key;
  std::string url;
  std::uint64_t size = 0;
  /// The version the store pinned when it read the header (ObjectStat::version), which the
  /// members of a distributed stream compare; discovery leaves it empty.
  ObjectVersion version;
  Header header;
  /// ObjectStore::memory_alignment() of the key, which the stream's tensor memory follows; 0
  /// until the stream asks, after discovery.
  std::size_t memory_alignment = 0;
};

/// Finds the files a stream of `url` reads, fetches their headers concurrently (at most
/// `options.max_concurrency` at a time, the default when unset), and keeps in each
/// header only the tensors the stream takes, each name in one file only:
///
/// - a URL naming a file: that file (a TRAW object when it ends in ".bin"); one naming an index:
///   the files and tensors it lists;
/// - a prefix, on a store that can list, with `TP{n}/shard{r}/*.bin` below it: the partition that
///   tensor_parallel_size and rank select (see select_partition()); with safetensors files or an
///   index directly under it as well, an InvalidArgument naming both;
/// - a prefix with `*.bin` and no `*.safetensors` directly under it: those TRAW objects, sorted
///   (a shard's prefix; tensor_parallel_size and rank, when set, must be the ones it names);
/// - tensor_parallel_size > 1: `model-rank-{rank}-part-*.safetensors` under the prefix;
/// - otherwise `model.safetensors.index.json` under the prefix, whose "weight_map" says which
///   tensors to take from which file (a listed tensor absent from its file is a FormatError
///   "Missing N tensors at URL: ..."). An index that is absent, not JSON or without "weight_map"
///   is skipped for every `*.safetensors` directly under the prefix, in lexicographic order, the
///   first file holding a name winning (a warning is logged for every later one). A store that
///   cannot list falls back to `model.safetensors` instead.
///
/// Then `options.select`, when set, keeps the tensors it accepts, and files left with none are
/// dropped.
///
/// Each TRAW header takes one range read of the first min(size, traw::max_header_size) bytes.
/// Errors other than an absent index (permission, network) are not swallowed.
boost::asio::awaitable<std::vector<SourceFile>> discover(ObjectStore& store, const Url& url,
                                                         const StreamerOptions& options);

/// What discover_blocking() found, and how the store it used reads ("http", "io_uring", ...).
struct Discovery {
  std::vector<SourceFile> files;
  std::string io_mode;
};

/// discover() through a store of its own on a context of its own, blocking the calling thread
/// until the headers are in (the store may keep work of its own pending, so the run ends with
/// discovery rather than when the context runs out of work). `options` are used as given.
Discovery discover_blocking(const Url& url, const StreamerOptions& options);

/// The index at `key`, whole (`listed_size`: its size, where a listing gave it); a FormatError
/// naming it when it is too large to be one (64 MiB).
boost::asio::awaitable<std::string> read_index(ObjectStore& store, const std::string& key,
                                               std::optional<std::uint64_t> listed_size = std::nullopt);

/// An object whose header to read, with its size when a listing already gave it.
struct HeaderSource {
  std::string key;
  std::optional<std::uint64_t> size;
};

/// Fetches and validates the header of every file (a TRAW header for a key ending in ".bin", else
/// a safetensors header), at most `max_concurrency` at a time, asking the store for the sizes no
/// listing gave; results keep the order of `sources`.
boost::asio::awaitable<std::vector<SourceFile>> read_headers(ObjectStore& store,
                                                             std::vector<HeaderSource> sources,
                                                             std::size_t max_concurrency);

}  // namespace tensorstream::detail
