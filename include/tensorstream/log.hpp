#pragma once
/// @file
/// Minimal leveled logging to stderr. Embedding services can redirect it with set_log_sink().

#include <functional>
#include <string_view>

namespace tensorstream {

/// Severity of a log message.
enum class LogLevel { debug = 0, info = 1, warning = 2, error = 3, off = 4 };

/// Receives every message at or above the current level.
using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Messages below `level` are dropped. The initial level comes from `TENSORSTREAM_LOG`
/// (debug, info, warning, error, off), warning when unset.
void set_log_level(LogLevel level);

/// The level below which messages are dropped.
LogLevel log_level();

/// Replaces the sink (stderr by default); an empty function restores stderr.
void set_log_sink(LogSink sink);

/// Sends `message` to the sink if `level` is enabled. Thread-safe.
void log(LogLevel level, std::string_view message);

}  // namespace tensorstream
