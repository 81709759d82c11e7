#pragma once
/// @file
/// Streaming of safetensors tensors as raw bytes, without libtorch.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>

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
/// `https://host/m/model.safetensors`) or a prefix ending in '/' (or a local directory), whose
/// `*.safetensors` files are streamed in lexicographic order; when two files hold a tensor of the
/// same name, the first file's wins. Over plain HTTP, which cannot list, a prefix streams
/// `model.safetensors` under it.
///
/// Work starts at construction on the stream's own I/O threads: headers of all files are fetched
/// concurrently, then every tensor is split into `chunk_size` range reads, at most
/// `max_concurrency` in flight, landing directly in the tensor's final memory. Memory allocated and
/// not yet released never exceeds `memory_limit` (one oversized tensor excepted); a consumer that
/// does not keep up stalls the downloads. A consumer that keeps every tensor alive until the limit
/// is full gets an Error saying so instead of waiting forever.
///
/// Destroying the streamer cancels every outstanding request and waits for them to finish.
/// Yielded tensors stay valid after the streamer is gone.
class RawStreamer {
 public:
  /// Starts streaming. Throws InvalidArgument for a bad URL or bad options; I/O errors (missing
  /// objects, HTTP errors, malformed headers) are thrown by next().
  explicit RawStreamer(std::string remote_path, StreamerOptions options = {});

  /// Like the constructor above, reading through the store `make_store` creates.
  RawStreamer(std::string remote_path, StreamerOptions options, StoreFactory make_store);
  ~RawStreamer();
  RawStreamer(const RawStreamer&) = delete;
  RawStreamer& operator=(const RawStreamer&) = delete;

  /// The next complete tensor, or nullopt after the last one. Resumes the awaiting coroutine on its
  /// own executor; never blocks that executor's thread. Throws the stream's first error. Only one
  /// next() or next_blocking() may be pending at a time.
  boost::asio::awaitable<std::optional<StreamedTensor>> next();

  /// Like next(), blocking the calling thread. Must not be called from a coroutine.
  std::optional<StreamedTensor> next_blocking();

  /// A snapshot of the stream's counters.
  StreamStats stats() const;

  /// The path this streamer was created with.
  const std::string& remote_path() const;

 private:
  class Engine;
  std::unique_ptr<Engine> engine_;
};

}  // namespace tensorstream
