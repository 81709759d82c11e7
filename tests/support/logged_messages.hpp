#pragma once
// Capturing what tensorstream logs, for tests that check it.

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/log.hpp"

namespace tensorstream::testing {

/// Collects the messages logged at one level while it exists. Where the log level would filter
/// that level out, it is lowered meanwhile and restored afterwards.
class LoggedMessages {
 public:
  explicit LoggedMessages(LogLevel level) : level_(level), previous_level_(log_level()) {
    if (level_ < previous_level_) set_log_level(level_);
    set_log_sink([this](LogLevel logged, std::string_view message) {
      if (logged != level_) return;
      std::lock_guard lock(mutex_);
      messages_.emplace_back(message);
    });
  }
  ~LoggedMessages() {
    set_log_sink({});
    set_log_level(previous_level_);
  }
  LoggedMessages(const LoggedMessages&) = delete;
  LoggedMessages& operator=(const LoggedMessages&) = delete;

  /// The messages so far, in order.
  std::vector<std::string> messages() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  const LogLevel level_;
  const LogLevel previous_level_;
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

}  // namespace tensorstream::testing
