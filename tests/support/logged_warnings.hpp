#pragma once
// Capturing the warnings tensorstream logs, for tests that check them.

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/log.hpp"

namespace tensorstream::testing {

/// Collects the warnings logged while it exists.
class LoggedWarnings {
 public:
  LoggedWarnings() {
    set_log_sink([this](LogLevel level, std::string_view message) {
      if (level != LogLevel::warning) return;
      std::lock_guard lock(mutex_);
      messages_.emplace_back(message);
    });
  }
  ~LoggedWarnings() { set_log_sink({}); }
  LoggedWarnings(const LoggedWarnings&) = delete;
  LoggedWarnings& operator=(const LoggedWarnings&) = delete;

  /// The warnings so far, in order.
  std::vector<std::string> messages() const {
    std::lock_guard lock(mutex_);
    return messages_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> messages_;
};

}  // namespace tensorstream::testing
