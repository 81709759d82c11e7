#pragma once
// Tests of code that reads the environment and the user's home directory (credential chains).

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "support/run_task.hpp"
#include "support/scoped_environment.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/storage/credentials_error.hpp"

namespace tensorstream::testing {

/// Clears the variables it is given, points HOME at a fresh directory (so the machine's own
/// ~/.aws or gcloud files stay out of the test), and restores everything afterwards.
class IsolatedEnvironmentTest : public ::testing::Test {
 protected:
  explicit IsolatedEnvironmentTest(std::initializer_list<const char*> variables)
      : environment_(variables) {
    set("HOME", home().string());
  }

  /// Sets `name` until the test ends.
  void set(const std::string& name, const std::string& value) { environment_.set(name, value); }
  /// Unsets `name` until the test ends.
  void unset(const std::string& name) { environment_.unset(name); }

  /// The test's HOME.
  const std::filesystem::path& home() const { return home_.path(); }

  /// Writes `text` to `path` (relative to HOME), creating directories; returns the full path.
  std::filesystem::path write(const std::string& path, const std::string& text) const {
    const auto full = home() / path;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << text;
    return full;
  }

  /// Runs `task` to completion on a fresh io_context; rethrows what it threw.
  template <class T>
  static T run(boost::asio::awaitable<T> task) {
    return run_task(std::move(task));
  }

  /// What a credential source's failing get() threw.
  struct Failure {
    std::string message;
    bool configured = false;
  };

  /// The error `source` (a CredentialSource of any cloud) fails with, and a test failure if it
  /// gets credentials instead.
  template <class Source>
  static Failure failure(Source& source) {
    try {
      run(source.get());
      ADD_FAILURE() << "got credentials from " << source.name();
    } catch (const CredentialsError& error) {
      return {error.what(), error.configured()};
    }
    return {};
  }

 private:
  TempDir home_;
  ScopedEnvironment environment_;
};

}  // namespace tensorstream::testing
