#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "tensorstream/streaming/stream_stats.hpp"

namespace tensorstream::cli {

/// A live one-line display on stderr, redrawn a few times a second from a thread of its own
/// until destroyed, then once more ending the line.
class ProgressBar {
 public:
  /// `render` gives the line's text; it is called on the display's thread.
  explicit ProgressBar(std::function<std::string()> render);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

 private:
  void draw(bool final) const;

  std::function<std::string()> render_;
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread thread_;
};

/// A stream's progress: a bar of the bytes loaded, GB/s, tensors and the time left.
std::string stream_progress(const StreamStats& stats);

/// A bar of `done` out of `total`, `width` characters wide.
std::string progress_bar(double done, double total, int width = 30);

}  // namespace tensorstream::cli
