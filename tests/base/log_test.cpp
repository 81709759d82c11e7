// Logging: sinks that log themselves, messages formatted only when their level is enabled, and
// the level taken from TENSORSTREAM_LOG.

#include "tensorstream/log.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "support/process.hpp"
#include "support/scoped_environment.hpp"

namespace tensorstream {
namespace {

// Restores the level and the stderr sink after each test.
class Log : public ::testing::Test {
 protected:
  ~Log() override {
    set_log_sink({});
    set_log_level(level_);
  }

  // Installs a sink recording "level: message", which `also` may extend.
  void record(std::function<void(LogLevel, std::string_view)> also = {}) {
    set_log_sink([this, also = std::move(also)](LogLevel level, std::string_view message) {
      {
        std::lock_guard lock(mutex_);
        messages_.push_back(std::to_string(static_cast<int>(level)) + ": " +
                            std::string(message));
      }
      if (also) also(level, message);
    });
  }

  std::vector<std::string> messages() {
    std::lock_guard lock(mutex_);
    return messages_;
  }

  LogLevel level_ = log_level();
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

// With the sink called under the logger's lock, this hangs (until ctest's timeout).
TEST_F(Log, SinkMayLogItself) {
  set_log_level(LogLevel::info);
  record([](LogLevel level, std::string_view message) {
    if (level == LogLevel::warning) log(LogLevel::info, "while logging: " + std::string(message));
  });
  log(LogLevel::warning, "disk full");
  EXPECT_EQ(messages(), (std::vector<std::string>{"3: disk full", "2: while logging: disk full"}));
}

TEST_F(Log, SinkMayReplaceItself) {
  record([this](LogLevel, std::string_view) {
    set_log_sink([this](LogLevel, std::string_view message) {
      std::lock_guard lock(mutex_);
      messages_.push_back("replacement: " + std::string(message));
    });
  });
  log(LogLevel::error, "first");
  log(LogLevel::error, "second");
  EXPECT_EQ(messages(), (std::vector<std::string>{"4: first", "replacement: second"}));
}

// The sink runs outside the logger's lock, yet a sink that set_log_sink() replaced must not run
// any more once it returns (callers destroy what the old sink used). A call of an old sink that
// sees itself replaced counts as a failure.
TEST_F(Log, ReplacedSinkIsNotRunningOnceSetLogSinkReturns) {
  std::atomic<bool> stop{false};
  std::atomic<int> calls_after_replacement{0};
  std::vector<std::thread> loggers;
  for (int i = 0; i < 3; ++i) {
    loggers.emplace_back([&] {
      while (!stop) log(LogLevel::error, "busy");
    });
  }
  // Each round replaces a sink while a call of it is running, so a set_log_sink() that did not
  // wait fails almost every round; a few rounds suffice, and more cost seconds under TSan.
  for (int round = 0; round < 30; ++round) {
    auto replaced = std::make_shared<std::atomic<bool>>(false);
    auto entered = std::make_shared<std::atomic<bool>>(false);
    set_log_sink([replaced, entered, &calls_after_replacement](LogLevel, std::string_view) {
      *entered = true;
      // Long enough for set_log_sink() to return meanwhile if it did not wait for this call.
      for (int i = 0; i < 100; ++i) std::this_thread::yield();
      if (*replaced) ++calls_after_replacement;
    });
    while (!*entered) std::this_thread::yield();
    set_log_sink([](LogLevel, std::string_view) {});
    *replaced = true;
  }
  stop = true;
  for (auto& logger : loggers) logger.join();
  EXPECT_EQ(calls_after_replacement, 0);
}

TEST_F(Log, LazyMessageIsFormattedOnlyWhenItsLevelIsEnabled) {
  record();
  int formatted = 0;
  const auto retrying = [&] {
    ++formatted;
    return std::string("s3://bucket/key: connection reset; retrying");
  };
  set_log_level(LogLevel::warning);
  EXPECT_FALSE(log_enabled(LogLevel::debug));
  log(LogLevel::debug, retrying);
  EXPECT_EQ(formatted, 0);
  EXPECT_TRUE(messages().empty());

  set_log_level(LogLevel::debug);
  EXPECT_TRUE(log_enabled(LogLevel::debug));
  log(LogLevel::debug, retrying);
  EXPECT_EQ(formatted, 1);
  EXPECT_EQ(messages(),
            std::vector<std::string>{"1: s3://bucket/key: connection reset; retrying"});
}

TEST_F(Log, NothingIsEnabledAtLevelOff) {
  set_log_level(LogLevel::off);
  for (const auto level : {LogLevel::debug, LogLevel::error, LogLevel::off}) {
    EXPECT_FALSE(log_enabled(level));
  }
}

// The level is read on first use: a fresh process of this test program, running one test that
// asks for it, shows what it says.
testing::ProcessResult load_with_log_variable(const std::string& value) {
  testing::ScopedEnvironment environment;
  environment.set("TENSORSTREAM_LOG", value);
  // A test that asks for the level, which is when the variable is read.
  return testing::run_process({std::filesystem::read_symlink("/proc/self/exe").string(),
                               "--gtest_filter=Log.NothingIsEnabledAtLevelOff", "--gtest_brief=1"});
}

TEST(LogEnvironment, InvalidLevelIsReportedOnceAndIgnored) {
  const auto result = load_with_log_variable("verbose");
  EXPECT_EQ(result.exit_code, 0) << result.out;
  EXPECT_EQ(result.err,
            "tensorstream: warning: TENSORSTREAM_LOG=verbose is not a log level (trace, debug, "
            "info, warning, error or off); using warning\n");
}

TEST(LogEnvironment, ValidLevelsAreAcceptedSilently) {
  for (const std::string value : {"trace", "debug", "info", "warning", "error", "off"}) {
    const auto result = load_with_log_variable(value);
    EXPECT_EQ(result.exit_code, 0) << value;
    EXPECT_EQ(result.err, "") << value;
  }
}

}  // namespace
}  // namespace tensorstream
