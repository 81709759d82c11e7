#pragma once
// The progress of a long transfer on stderr: a bar redrawn in place on a terminal, a plain line
// every few seconds in logs.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>

#include "tensorstream/async/library_thread.hpp"

namespace tensorstream::cli {

/// How far a transfer is at one moment.
struct ProgressSample {
  std::uint64_t done = 0;   ///< Bytes done.
  std::uint64_t total = 0;  ///< Bytes in all; 0 while unknown.
  std::string detail;       ///< Shown last where it fits, e.g. "3/7 tensors"; may be empty.
  /// What the transfer waits for longest, "a response from HOST" (StoreStats::waiting_for), and
  /// for how many seconds; shown in place of the rate once the wait is long enough to notice.
  std::string waiting_for{};
  double waiting_seconds = 0;
};

/// How a display writes to stderr.
enum class ProgressStyle {
  bar,    ///< One line redrawn over itself ("\r", "\033[K"), fitted to the terminal's width.
  plain,  ///< A whole line every few seconds, for logs: no carriage returns, no escapes.
};

/// The text of a display: samples, taken at given times, in; what to write to stderr out. Pure:
/// the clock and the width are the caller's.
///
/// The rate is the one over the last rate_window, so that it follows a link that slows down or
/// speeds up; the time left comes from it. The final line gives the average over the whole run.
class ProgressRenderer {
 public:
  using Clock = std::chrono::steady_clock;

  /// The span of the samples the current rate is measured over.
  static constexpr std::chrono::seconds rate_window{5};
  /// How often the plain style writes a line.
  static constexpr std::chrono::seconds plain_interval{5};
  /// A wait for a server shorter than this is a request's normal course, and not shown.
  static constexpr std::chrono::seconds waiting_shown_after{2};

  /// A display of a transfer that started at `start`.
  ProgressRenderer(ProgressStyle style, Clock::time_point start);

  /// Records `sample`, taken at `now`, and returns what to write for it: the bar redrawn, at most
  /// `columns` - 1 characters wide; in the plain style a line when plain_interval has passed
  /// since the last one (or the start), else "".
  std::string update(const ProgressSample& sample, Clock::time_point now, int columns);

  /// Records the last sample, taken at `now`, and returns what ends the display. After success
  /// a final line with the total and the average rate, e.g.
  /// "tensorstream: 2.0 GiB in 4.0 s, average 512.0 MiB/s, 7/7 tensors" (the plain style only
  /// when it wrote a line before: quick runs stay quiet in logs). After a failure, what erases
  /// the bar, so that the error message starts a line of its own.
  std::string finish(const ProgressSample& sample, Clock::time_point now, int columns,
                     bool succeeded);

 private:
  struct Point {
    Clock::time_point at;
    std::uint64_t done = 0;
  };

  void record(const ProgressSample& sample, Clock::time_point now);
  // Bytes per second over the window; nullopt until two samples lie apart in time.
  std::optional<double> rate() const;
  // Of the last sample: done out of total (0 while unknown), "1.0 MiB / 2.0 MiB", "50%", and
  // "ETA 3m07s" from the rate ("ETA --" while unknown).
  double fraction() const;
  std::string amount() const;
  std::string percent() const;
  std::string time_left() const;
  // "waiting for a response from HOST (12 s)" once the sample's wait is long enough; else "".
  std::string waiting() const;
  std::string bar_line(int columns) const;
  std::string plain_line() const;
  std::string final_line(Clock::time_point now) const;

  ProgressStyle style_;
  Clock::time_point start_;
  Clock::time_point last_line_;
  bool drawn_ = false;
  // The samples of the window, oldest first, with the newest one from before it.
  std::deque<Point> window_;
  ProgressSample last_;
};

/// The width of the terminal on stderr; else $COLUMNS; else 80.
int terminal_columns();

/// Shows a transfer on stderr, sampled a few times a second on a thread of its own, until
/// finish() or destruction.
class ProgressDisplay {
 public:
  /// `sample` is called on the display's thread.
  ProgressDisplay(ProgressStyle style, std::function<ProgressSample()> sample);

  /// Stops sampling and writes the final line.
  void finish();

  /// Stops sampling where a summary line saying the same follows: a bar is erased rather than
  /// left as a final line above it; the plain style writes its final line, as finish() does, for
  /// logs that may not hold the summary.
  void finish_before_summary();

  /// Without finish() (a failure unwinding), stops sampling and erases the bar.
  ~ProgressDisplay();

  ProgressDisplay(const ProgressDisplay&) = delete;
  ProgressDisplay& operator=(const ProgressDisplay&) = delete;

 private:
  // Ends the display with its final line, or erasing the bar (a failure unwinding).
  void stop(bool final_line);
  void write(const std::string& text) const;

  std::function<ProgressSample()> sample_;
  ProgressStyle style_;
  ProgressRenderer renderer_;
  std::mutex mutex_;
  std::condition_variable stop_requested_;
  bool stopping_ = false;
  bool stopped_ = false;
  async::LibraryThread thread_;
};

}  // namespace tensorstream::cli
