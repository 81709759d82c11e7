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
  const std::string_view text(value);
  if (text == "debug") return LogLevel::debug;
  if (text == "info") return LogLevel::info;
  if (text == "warning") return LogLevel::warning;
  if (text == "error") return LogLevel::error;
  if (text == "off") return LogLevel::off;
  // Once, at load time: a typo would otherwise silently hide the messages the user asked for.
  std::cerr << "tensorstream warning: TENSORSTREAM_LOG=" + std::string(text) +
                   " is not a log level (debug, info, warning, error or off); using warning\n";
  return LogLevel::warning;
}

std::atomic<LogLevel> current_level{level_from_environment()};

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
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warning: return "warning";
    case LogLevel::error: return "error";
    case LogLevel::off: break;
  }
  return "";
}

}  // namespace

void set_log_level(LogLevel level) { current_level.store(level); }

LogLevel log_level() { return current_level.load(); }

bool log_enabled(LogLevel level) {
  return level != LogLevel::off && level >= current_level.load(std::memory_order_relaxed);
}

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
    std::cerr << "tensorstream " + std::string(level_name(level)) + ": " + std::string(message) +
                     '\n';
    return;
  }
  const SinkCall call(std::move(sink));
  (*call.sink)(level, message);
}

}  // namespace tensorstream
