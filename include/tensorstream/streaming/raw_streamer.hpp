#pragma once
/// @file
/// Streaming of safetensors tensors as raw bytes, without libtorch.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "tensorstream/export.hpp"
#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/url.hpp"
#include "tensorstream/streaming/stream_stats.hpp"
#include "tensorstream/streaming/streamed_tensor.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream {

/// Creates the ObjectStore a stream reads `url` through, running its I/O on `executor`.
/// open_store() is the default; a custom factory plugs in another backend.
using StoreFactory =
    std::function<std::unique_ptr<ObjectStore>(const Url& url, boost::asio::any_io_executor executor)>;

/// Streams every tensor of a safetensors checkpoint into memory, yielding each as soon as its
/// last byte has landed.
///
/// `remote_path` names one file (`file:///m/model.safetensors`, `/m/model.safetensors`,
/// `https://host/m/model.safetensors`), an index (`.../model.safetensors.index.json`), or a prefix
/// ending in '/' (or a local directory, or an s3:// or gs:// path not ending in `.safetensors`).
/// Under a prefix, `model.safetensors.index.json` decides which tensors come from which file; a
/// listed tensor missing from its file is a FormatError. Without an index (or with one that is not
/// JSON or has no "weight_map"), the `*.safetensors` files directly under the prefix are streamed
/// in lexicographic order, and when two hold a tensor of the same name, the first file's wins.
/// Over plain HTTP, which cannot list, that fallback is `model.safetensors` alone. An http(s)
/// URL's query (a presigned URL's signature, a SAS token) goes with every request for every
/// object it leads to, and messages show it as `?…`. With
/// tensor_parallel_size > 1 the index is ignored and the rank's files
/// `model-rank-{rank}-part-*.safetensors` are streamed.
///
/// TRAW objects (one tensor each, named by the object's name without ".bin") stream the same way:
/// a single `.../name.bin`, a shard's prefix holding `*.bin` (sorted by key), or a model's prefix
/// holding `TP{n}/shard{r}/*.bin` with tensor_parallel_size and rank selecting
/// `TP{tensor_parallel_size}/shard{rank}/`. A model prefix holding both layouts, or a partition
/// that was not written, is an error listing what the prefix holds.
///
/// Work starts at construction on the stream's own I/O threads (or on a service's executor, see
/// the constructor taking one): headers of all files are fetched
/// concurrently (at most `max_concurrency` at a time), then every tensor is split into
/// `chunk_size` range reads, at most `max_concurrency` in flight, landing directly in the tensor's
/// final memory; runs of small neighbouring tensors of a file (each under 1 MiB) share one read and
/// are copied out into their own memory. Reads are scheduled smallest first. Memory the stream
/// holds (reads in flight, tensors not yet taken) never exceeds `memory_limit` (one oversized
/// tensor excepted); a consumer that does not keep up stalls the downloads, and one that keeps
/// every tensor may (see MemoryAccounting for the hard cap that counts kept tensors too).
///
/// With StreamerOptions::distributed, the stream is one member of a group of processes that read
/// the checkpoint together: it reads its share of the plan and receives the rest by broadcast
/// from the others, and yields every tensor all the same (see DistributedOptions); stats() then
/// count the received bytes in `broadcast_bytes`.
///
/// Destroying the streamer cancels every outstanding request and waits for them to finish.
/// Yielded tensors stay valid after the streamer is gone.
///
/// A stream belongs to the process that made it: fork() copies none of its threads. In a child,
/// its next(), next_blocking() and stats() throw StateError at once, naming both processes, and
/// destroying it lets it go without waiting (its memory is the parent's copy). Streams made in
/// the child work as anywhere.
class TENSORSTREAM_API RawStreamer {
 public:
  /// Starts streaming. Options left unset are read from the environment (see StreamerOptions).
  /// Throws InvalidArgument for a bad URL, bad options or a malformed environment variable; I/O
  /// errors (missing objects, HTTP errors, malformed headers) are thrown by next().
  explicit RawStreamer(std::string remote_path, StreamerOptions options = {});

  /// Like the constructor above, reading through the store `make_store` creates.
  RawStreamer(std::string remote_path, StreamerOptions options, StoreFactory make_store);

  /// Starts streaming on `executor`, a service's own (e.g. its io_context's), with no thread of
  /// the stream's: every read, timer and completion runs there, and options.io_threads is
  /// unused. The service must keep running the executor's context until the stream's work ends:
  /// until next() returns nullopt or throws, or after destruction, until the cancelled work has
  /// wound down (destruction does not wait for it, so it may happen on the executor's own
  /// thread). next_blocking() must not be called on a thread the executor needs.
  RawStreamer(boost::asio::any_io_executor executor, std::string remote_path,
              StreamerOptions options = {});

  /// Like the constructor above, reading through the store `make_store` creates.
  RawStreamer(boost::asio::any_io_executor executor, std::string remote_path,
              StreamerOptions options, StoreFactory make_store);
  ~RawStreamer();
  RawStreamer(const RawStreamer&) = delete;
  RawStreamer& operator=(const RawStreamer&) = delete;

  /// The next complete tensor, or nullopt after the last one. Resumes the awaiting coroutine on its
  /// own executor; never blocks that executor's thread. Throws the stream's first error. Only one
  /// next() or next_blocking() may be pending at a time (StateError otherwise).
  ///
  /// Cancelled by the awaiting coroutine's cancellation slot (e.g. as the losing side of
  /// `next() || timer`): throws boost::system::system_error(operation_aborted), takes no tensor,
  /// and next() may be called again. Throws Cancelled when the streamer is destroyed meanwhile.
  boost::asio::awaitable<std::optional<StreamedTensor>> next();

  /// Like next(), blocking the calling thread. Must not be called from a coroutine.
  std::optional<StreamedTensor> next_blocking();

  /// A snapshot of the stream's counters.
  StreamStats stats() const;

  /// The path this streamer was created with, as messages show it: an http(s) URL's query (a
  /// signature) as `?…`.
  const std::string& remote_path() const;

 private:
  class Engine;
  std::shared_ptr<Engine> engine_;
};

}  // namespace tensorstream
