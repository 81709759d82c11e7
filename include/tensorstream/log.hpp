#pragma once
/// @file
/// Minimal leveled logging to stderr. Embedding services can redirect it with set_log_sink().

#include <concepts>
#include <functional>
#include <optional>
#include <string_view>

#include "tensorstream/export.hpp"

namespace tensorstream {

/// Severity of a log message. `trace` is one line per HTTP request; `debug` says what the
/// library chose (credential source, endpoint, region, addressing) and each connection opened;
/// `warning`, the default, includes every retry.
enum class LogLevel { trace = 0, debug = 1, info = 2, warning = 3, error = 4, off = 5 };

/// The names parse_log_level() accepts, for messages: "trace, debug, info, warning, error or off".
inline constexpr std::string_view log_level_names = "trace, debug, info, warning, error or off";

/// The level named `text` (one of log_level_names), or nullopt.
TENSORSTREAM_API
std::optional<LogLevel> parse_log_level(std::string_view text);

/// Receives every message at or above the current level.
using LogSink = std::function<void(LogLevel, std::string_view)>;

/// Messages below `level` are dropped. Unless this is called first, the level comes from
/// `TENSORSTREAM_LOG` (one of log_level_names), read on the first message or query; warning when
/// unset, and any other value is reported once on stderr and ignored.
TENSORSTREAM_API
void set_log_level(LogLevel level);

/// The level below which messages are dropped.
TENSORSTREAM_API
LogLevel log_level();

/// Whether messages at `level` are sent to the sink: a cheap check for callers that would
/// otherwise build a message only to have it dropped.
TENSORSTREAM_API
bool log_enabled(LogLevel level);

/// Replaces the sink (stderr by default, one line per message: `tensorstream: warning: …`); an empty function restores stderr. When it returns,
/// no call of the old sink is running, except one that called set_log_sink() itself.
TENSORSTREAM_API
void set_log_sink(LogSink sink);

/// Sends `message` to the sink if `level` is enabled. Thread-safe. The sink is called without
/// any lock held, from the logging thread, so it may log itself; it must be thread-safe.
TENSORSTREAM_API
void log(LogLevel level, std::string_view message);

/// Like log(level, message), but calls `make_message` (returning something convertible to
/// std::string_view, e.g. a std::string) only if `level` is enabled, so that a debug message
/// costs nothing to format while debug logging is off:
/// `log(LogLevel::debug, [&] { return url + ": retrying"; });`
template <class MakeMessage>
  requires std::invocable<MakeMessage&>
void log(LogLevel level, MakeMessage&& make_message) {
  if (!log_enabled(level)) return;
  const auto message = make_message();
  log(level, std::string_view(message));
}

}  // namespace tensorstream
