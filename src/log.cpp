#include "tensorstream/log.hpp"

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>

namespace tensorstream {
namespace {

LogLevel level_from_environment() {
  const char* value = std::getenv("TENSORSTREAM_LOG");
  if (value == nullptr) return LogLevel::warning;
  const std::string_view text(value);
  if (text == "debug") return LogLevel::debug;
  if (text == "info") return LogLevel::info;
  if (text == "error") return LogLevel::error;
  if (text == "off") return LogLevel::off;
  return LogLevel::warning;
}

std::atomic<LogLevel> current_level{level_from_environment()};
std::mutex sink_mutex;
LogSink current_sink;

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

void set_log_sink(LogSink sink) {
  std::lock_guard lock(sink_mutex);
  current_sink = std::move(sink);
}

void log(LogLevel level, std::string_view message) {
  if (level < current_level.load() || level == LogLevel::off) return;
  std::lock_guard lock(sink_mutex);
  if (current_sink) {
    current_sink(level, message);
  } else {
    std::cerr << "tensorstream " << level_name(level) << ": " << message << '\n';
  }
}

}  // namespace tensorstream
