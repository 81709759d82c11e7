#include "cli/progress_bar.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

#include "byte_size.hpp"

namespace tensorstream::cli {

ProgressBar::ProgressBar(std::function<std::string()> render) : render_(std::move(render)) {
  thread_ = std::thread([this] {
    std::unique_lock lock(mutex_);
    while (!stop_requested_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stopping_; })) {
      draw(false);
    }
    draw(true);
  });
}

ProgressBar::~ProgressBar() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
}

void ProgressBar::draw(bool final) const {
  std::fprintf(stderr, "\r%s\033[K%s", render_().c_str(), final ? "\n" : "");
  std::fflush(stderr);
}

std::string progress_bar(double done, double total, int width) {
  const double fraction = total > 0 ? done / total : 0.0;
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(static_cast<std::size_t>(width), '.');
  return "[" + bar + "]";
}

std::string stream_progress(const StreamStats& stats) {
  const double rate = stats.gigabytes_per_second();
  std::string eta = "--";
  if (rate > 0 && stats.total_bytes >= stats.bytes) {
    const double seconds = static_cast<double>(stats.total_bytes - stats.bytes) / (rate * 1e9);
    char text[32];
    std::snprintf(text, sizeof text, "%.1fs", seconds);
    eta = text;
  }
  char text[256];
  std::snprintf(text, sizeof text, "%s %s / %s  %.2f GB/s  %llu/%llu tensors  ETA %s",
                progress_bar(static_cast<double>(stats.bytes),
                             static_cast<double>(stats.total_bytes)).c_str(),
                format_byte_size(stats.bytes).c_str(), format_byte_size(stats.total_bytes).c_str(),
                rate, static_cast<unsigned long long>(stats.tensors),
                static_cast<unsigned long long>(stats.total_tensors), eta.c_str());
  return text;
}

}  // namespace tensorstream::cli
