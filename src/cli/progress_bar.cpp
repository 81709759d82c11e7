#include "cli/progress_bar.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/byte_size.hpp"

namespace tensorstream::cli {
namespace {

using Seconds = std::chrono::duration<double>;

// Narrower bars say too little to be worth their columns; wider ones only take room.
constexpr int min_bar_width = 10;
constexpr int max_bar_width = 30;
// Beyond this a time left is no estimate but a rate that has all but stopped.
constexpr double max_seconds_left = 100 * 3600;
constexpr auto redraw_interval = std::chrono::milliseconds(200);

std::string bar(double fraction, int width) {
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * width);
  std::string text(static_cast<std::size_t>(filled), '#');
  text.resize(static_cast<std::size_t>(width), '.');
  return "[" + text + "]";
}

constexpr const char* unknown_rate = "-- B/s";

std::string rate_text(std::optional<double> bytes_per_second) {
  return bytes_per_second ? format_byte_rate(*bytes_per_second) : unknown_rate;
}

// The line in `text` drawn over the one before, from the start of the line to its end.
std::string redrawn(const std::string& text) {
  // Appended rather than added up: GCC 12 warns falsely of "\r" + std::string.
  std::string line = "\r";
  line += text;
  line += "\033[K";
  return line;
}

// "42s", "3m07s", "2h05m"; "--" when unknown.
std::string duration_text(std::optional<double> seconds) {
  if (!seconds || !(*seconds < max_seconds_left)) return "--";
  const auto whole = static_cast<long long>(std::ceil(*seconds));
  char text[32];
  if (whole < 60) {
    std::snprintf(text, sizeof text, "%llds", whole);
  } else if (whole < 3600) {
    std::snprintf(text, sizeof text, "%lldm%02llds", whole / 60, whole % 60);
  } else {
    std::snprintf(text, sizeof text, "%lldh%02lldm", whole / 3600, whole / 60 % 60);
  }
  return text;
}

// The non-empty fields, between separators.
std::string joined(const std::vector<std::string>& fields, const char* separator) {
  std::string text;
  for (const auto& field : fields) {
    if (field.empty()) continue;
    if (!text.empty()) text += separator;
    text += field;
  }
  return text;
}

}  // namespace

ProgressRenderer::ProgressRenderer(ProgressStyle style, Clock::time_point start)
    : style_(style), start_(start), last_line_(start), window_{{start, 0}} {}

void ProgressRenderer::record(const ProgressSample& sample, Clock::time_point now) {
  last_ = sample;
  window_.push_back({now, sample.done});
  while (window_.size() > 2 && window_[1].at <= now - rate_window) window_.pop_front();
}

std::optional<double> ProgressRenderer::rate() const {
  const Point& first = window_.front();
  const Point& last = window_.back();
  const double seconds = Seconds(last.at - first.at).count();
  if (seconds <= 0) return std::nullopt;
  const std::uint64_t bytes = last.done > first.done ? last.done - first.done : 0;
  return static_cast<double>(bytes) / seconds;
}

std::string ProgressRenderer::update(const ProgressSample& sample, Clock::time_point now,
                                     int columns) {
  record(sample, now);
  if (style_ == ProgressStyle::bar) {
    drawn_ = true;
    return redrawn(bar_line(columns));
  }
  if (now - last_line_ < plain_interval) return "";
  last_line_ = now;
  drawn_ = true;
  return plain_line() + "\n";
}

std::string ProgressRenderer::finish(const ProgressSample& sample, Clock::time_point now,
                                     int columns, bool succeeded) {
  record(sample, now);
  if (style_ == ProgressStyle::plain) return succeeded && drawn_ ? final_line(now) + "\n" : "";
  if (!succeeded) return drawn_ ? "\r\033[K" : "";
  const auto room = static_cast<std::size_t>(std::max(columns - 1, 1));
  std::string line = final_line(now);
  // The detail goes when it does not fit; the totals and the average never: the final line is
  // written once, so wrapping a narrow terminal costs nothing, and cutting it would lose them.
  if (line.size() > room) {
    ProgressRenderer without_detail = *this;
    without_detail.last_.detail.clear();
    line = without_detail.final_line(now);
  }
  return redrawn(line) + "\n";
}

double ProgressRenderer::fraction() const {
  if (last_.total == 0) return 0;
  return std::clamp(static_cast<double>(last_.done) / static_cast<double>(last_.total), 0.0, 1.0);
}

std::string ProgressRenderer::amount() const {
  std::string text = format_byte_size(last_.done);
  if (last_.total > 0) text += " / " + format_byte_size(last_.total);
  return text;
}

std::string ProgressRenderer::percent() const {
  return std::to_string(static_cast<int>(fraction() * 100)) + "%";
}

std::string ProgressRenderer::time_left() const {
  std::optional<double> seconds;
  const auto bytes_per_second = rate();
  if (last_.done >= last_.total) {
    seconds = 0;
  } else if (bytes_per_second && *bytes_per_second > 0) {
    seconds = static_cast<double>(last_.total - last_.done) / *bytes_per_second;
  }
  return "ETA " + duration_text(seconds);
}

std::string ProgressRenderer::waiting() const {
  if (last_.waiting_for.empty() ||
      last_.waiting_seconds < Seconds(waiting_shown_after).count()) {
    return "";
  }
  return "waiting for " + last_.waiting_for + " (" +
         std::to_string(static_cast<long long>(last_.waiting_seconds)) + " s)";
}

std::string ProgressRenderer::bar_line(int columns) const {
  // The last column stays empty: writing it makes some terminals wrap.
  const int room = std::max(columns - 1, 1);
  const bool known = last_.total > 0;
  const std::string percent_done = known ? percent() : "";
  // While a server keeps the transfer waiting, what for says more than a rate of nothing.
  const std::string waited = waiting();
  const std::string left = known && waited.empty() ? time_left() : "";
  const std::string speed = waited.empty() ? rate_text(rate()) : waited;
  // As the width shrinks, the detail goes first, then the bar, the time left and the rate.
  std::string text;
  for (int dropped = 0; dropped <= 4; ++dropped) {
    text = joined({amount(), percent_done, dropped < 4 ? speed : "", dropped < 3 ? left : "",
                   dropped < 1 ? last_.detail : ""},
                  "  ");
    if (known && dropped < 2) {
      const int width = std::min(max_bar_width, room - static_cast<int>(text.size()) - 4);
      if (width >= min_bar_width) return bar(fraction(), width) + "  " + text;
    } else if (static_cast<int>(text.size()) <= room) {
      return text;
    }
  }
  return text.substr(0, static_cast<std::size_t>(room));
}

std::string ProgressRenderer::plain_line() const {
  const bool known = last_.total > 0;
  std::string line = "tensorstream: " + amount();
  if (known) line += " (" + percent() + ")";
  const std::string waited = waiting();
  if (!waited.empty()) return line + ", " + joined({waited, last_.detail}, ", ");
  return line + ", " + joined({rate_text(rate()), known ? time_left() : "", last_.detail}, ", ");
}

std::string ProgressRenderer::final_line(Clock::time_point now) const {
  const double seconds = Seconds(now - start_).count();
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f s", seconds);
  const std::string average =
      seconds > 0 ? format_byte_rate(static_cast<double>(last_.done) / seconds) : unknown_rate;
  return "tensorstream: " + joined({format_byte_size(last_.done) + " in " + elapsed,
                                    "average " + average, last_.detail},
                                   ", ");
}

int terminal_columns() {
  winsize size{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  if (const char* columns = std::getenv("COLUMNS")) {
    char* end = nullptr;
    const long value = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && value > 0 && value < 100000) {
      return static_cast<int>(value);
    }
  }
  return 80;
}

ProgressDisplay::ProgressDisplay(ProgressStyle style, std::function<ProgressSample()> sample)
    : sample_(std::move(sample)), style_(style), renderer_(style, ProgressRenderer::Clock::now()) {
  thread_ = async::LibraryThread("ts-progress", [this] {
    std::unique_lock lock(mutex_);
    while (!stop_requested_.wait_for(lock, redraw_interval, [this] { return stopping_; })) {
      write(renderer_.update(sample_(), ProgressRenderer::Clock::now(), terminal_columns()));
    }
  });
}

void ProgressDisplay::finish() { stop(true); }

void ProgressDisplay::finish_before_summary() { stop(style_ == ProgressStyle::plain); }

ProgressDisplay::~ProgressDisplay() { stop(false); }

void ProgressDisplay::stop(bool final_line) {
  if (stopped_) return;
  stopped_ = true;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_requested_.notify_all();
  thread_.join();
  write(renderer_.finish(sample_(), ProgressRenderer::Clock::now(), terminal_columns(),
                         final_line));
}

void ProgressDisplay::write(const std::string& text) const {
  if (text.empty()) return;
  std::fputs(text.c_str(), stderr);
  std::fflush(stderr);
}

}  // namespace tensorstream::cli
