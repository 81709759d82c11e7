#include "tensorstream/log.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace tensorstream {
namespace {

LogLevel level_from_environment() {
  const char* value = std::getenv("TENSORSTREAM_LOG");
  if (value == nullptr) return LogLevel::warning;
  if (auto level = parse_log_level(value)) return *level;
  // Once: a typo would otherwise silently hide the messages the user asked for.
  std::cerr << "tensorstream: warning: TENSORSTREAM_LOG=" + std::string(value) +
                   " is not a log level (" + std::string(log_level_names) + "); using warning\n";
  return LogLevel::warning;
}

// Read from the environment on first use rather than at load time, so that a program that sets
// the level itself (the CLI, from -v and its own check of the variable) is never overruled.
constexpr int level_unset = -1;
std::atomic<int> current_level{level_unset};

LogLevel current() {
  const int level = current_level.load(std::memory_order_relaxed);
  if (level != level_unset) return static_cast<LogLevel>(level);
  static const LogLevel from_environment = level_from_environment();
  int expected = level_unset;
  current_level.compare_exchange_strong(expected, static_cast<int>(from_environment));
  return static_cast<LogLevel>(current_level.load());
}

// The sink is called without a lock held, so that it may log itself. A call holds its own
// reference to the sink; set_log_sink() waits for the calls holding the old one.
std::mutex sink_mutex;
std::condition_variable sink_released;
std::shared_ptr<const LogSink> current_sink;
thread_local int sink_depth = 0;

// One call of a sink: drops its reference under the lock however the sink returns, and wakes
// set_log_sink().
struct SinkCall {
  explicit SinkCall(std::shared_ptr<const LogSink> called) : sink(std::move(called)) {
    ++sink_depth;
  }
  SinkCall(const SinkCall&) = delete;
  SinkCall& operator=(const SinkCall&) = delete;
  ~SinkCall() {
    --sink_depth;
    {
      std::lock_guard lock(sink_mutex);
      sink.reset();
    }
    sink_released.notify_all();
  }

  std::shared_ptr<const LogSink> sink;
};

constexpr std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return "trace";
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
    case LogLevel::off: break;
  }
  return "";
}

}  // namespace

std::optional<LogLevel> parse_log_level(std::string_view text) {
  for (const LogLevel level : {LogLevel::trace, LogLevel::debug, LogLevel::info,
                               LogLevel::warning, LogLevel::error}) {
    if (text == level_name(level)) return level;
  }
  if (text == "off") return LogLevel::off;
  return std::nullopt;
}

void set_log_level(LogLevel level) { current_level.store(static_cast<int>(level)); }

LogLevel log_level() { return current(); }

bool log_enabled(LogLevel level) { return level != LogLevel::off && level >= current(); }

void set_log_sink(LogSink sink) {
  std::shared_ptr<const LogSink> installed;
  if (sink) installed = std::make_shared<const LogSink>(std::move(sink));
  // Destroyed after the lock is released, in case destroying the sink logs.
  std::shared_ptr<const LogSink> old;
  std::unique_lock lock(sink_mutex);
  old = std::exchange(current_sink, std::move(installed));
  // A sink replacing itself from inside a call cannot wait for that call to end.
  if (old && sink_depth == 0) sink_released.wait(lock, [&] { return old.use_count() == 1; });
}

void log(LogLevel level, std::string_view message) {
  if (!log_enabled(level)) return;
  std::shared_ptr<const LogSink> sink;
  {
    std::lock_guard lock(sink_mutex);
    sink = current_sink;
  }
  if (!sink) {
    // One write per message, so that lines of concurrent callers do not interleave.
    std::cerr << "tensorstream: " + std::string(level_name(level)) + ": " + std::string(message) +
                     '\n';
    return;
  }
  const SinkCall call(std::move(sink));
  (*call.sink)(level, message);
}

}  // namespace tensorstream
