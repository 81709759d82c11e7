#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "tensorstream/streaming/stream_stats.hpp"

namespace tensorstream::cli {

/// A live one-line progress display on stderr (bytes, GB/s, ETA), redrawn a few times a second
/// from a thread of its own until destroyed.
class ProgressBar {
 public:
  explicit ProgressBar(std::function<StreamStats()> stats);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

 private:
  void draw(bool final) const;

  std::function<StreamStats()> stats_;
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tensorstream::cli
