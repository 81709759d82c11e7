#pragma once
/// @file
/// Streaming a safetensors checkpoint straight into torch::Tensor objects.

#include <ATen/core/Tensor.h>

#include <boost/asio/awaitable.hpp>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "tensorstream/export.hpp"
#include "tensorstream/streaming/raw_streamer.hpp"

namespace tensorstream {

/// A streamed tensor and its name.
using NamedTensor = std::pair<std::string, at::Tensor>;

/// Wraps a streamed tensor's memory in a CPU tensor of its dtype and shape, without copying.
/// The memory goes back to the stream's budget when the tensor (and every view of it) is gone.
/// F8_E5M2 and F8_E4M3 become uint8 tensors, libtorch 1.13 having no float8 types; the original
/// dtype stays in `tensor.info.dtype`.
TENSORSTREAM_API
at::Tensor to_torch(const StreamedTensor& tensor);

/// Streams the tensors of a safetensors checkpoint from object storage into torch tensors,
/// yielding each as soon as its bytes have landed (not in file order). The C++ counterpart of the
/// Python SafeTensorsStreamer; see RawStreamer for how the stream works and what it bounds.
///
/// @code
/// tensorstream::SafeTensorsStreamer streamer("https://host/models/llama/", "/srv/model");
/// while (auto tensor = co_await streamer.next()) {
///   auto& [name, value] = *tensor;
///   model.at(name).copy_(value);
/// }
/// @endcode
class TENSORSTREAM_API SafeTensorsStreamer {
 public:
  /// Starts streaming `remote_path`. `local_path` is where the surrounding loader keeps the other
  /// artifacts (config.json, tokenizer); the stream itself does not touch it.
  SafeTensorsStreamer(std::string remote_path, std::string local_path = "/srv/model",
                      StreamerOptions options = {});

  /// Starts streaming `remote_path` on `executor`, a service's own, with no thread of the
  /// stream's; see RawStreamer's constructor taking an executor for what the service must do.
  SafeTensorsStreamer(boost::asio::any_io_executor executor, std::string remote_path,
                      std::string local_path = "/srv/model", StreamerOptions options = {});

  /// The next complete tensor, or nullopt after the last. Resumes on the awaiting coroutine's
  /// executor and never blocks its thread.
  boost::asio::awaitable<std::optional<NamedTensor>> next();

  /// Like next(), blocking the calling thread.
  std::optional<NamedTensor> next_blocking();

  /// An input range over the remaining tensors, for `for (auto& [name, t] : s.get_tensors())`.
  /// Downloads keep running on the stream's threads while the loop body works.
  class TensorRange;
  TensorRange get_tensors();

  /// A snapshot of the stream's counters.
  StreamStats stats() const { return raw_.stats(); }
  /// The remote path given at construction.
  const std::string& remote_path() const { return raw_.remote_path(); }
  /// The local path given at construction.
  const std::string& local_path() const { return local_path_; }

 private:
  RawStreamer raw_;
  std::string local_path_;
};

/// The range returned by SafeTensorsStreamer::get_tensors(). Single pass.
class TENSORSTREAM_API SafeTensorsStreamer::TensorRange {
 public:
  /// Input iterator yielding NamedTensor.
  class iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = NamedTensor;
    using difference_type = std::ptrdiff_t;
    using pointer = NamedTensor*;
    using reference = NamedTensor&;

    iterator() = default;
    reference operator*() const { return *range_->current_; }
    pointer operator->() const { return &*range_->current_; }
    iterator& operator++() {
      range_->advance();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.at_end() == b.at_end();
    }

   private:
    friend class TensorRange;
    explicit iterator(TensorRange* range) : range_(range) {}
    bool at_end() const { return range_ == nullptr || !range_->current_; }
    TensorRange* range_ = nullptr;
  };

  /// Fetches the first tensor (blocking) and returns an iterator to it.
  iterator begin() {
    advance();
    return iterator(this);
  }
  /// The end of the stream.
  iterator end() { return iterator(); }

 private:
  friend class SafeTensorsStreamer;
  explicit TensorRange(SafeTensorsStreamer& streamer) : streamer_(&streamer) {}
  void advance() { current_ = streamer_->next_blocking(); }

  SafeTensorsStreamer* streamer_;
  std::optional<NamedTensor> current_;
};

inline SafeTensorsStreamer::TensorRange SafeTensorsStreamer::get_tensors() {
  return TensorRange(*this);
}

}  // namespace tensorstream
