#pragma once
/// @file
/// Skipping a test whose tool or server is missing, without letting CI pass quietly.

#include <gtest/gtest.h>

namespace tensorstream::testing {

/// Whether the tests run in CI (CI=true, as CI services and `.ci/run` set it). CI installs every
/// tool the tests use through scripts/setup.sh, so there a missing tool is a broken install.
bool running_in_ci();

}  // namespace tensorstream::testing

/// Skips the current test for `reason` (the tool or server that is missing; streamable, e.g.
/// `"nginx is not installed at " << path`), or fails it when running_in_ci(). Like GTEST_SKIP it
/// returns from the enclosing void function (a test body or SetUp). Limits that CI may genuinely
/// have, such as io_uring blocked by a seccomp profile, skip with GTEST_SKIP instead.
#define TENSORSTREAM_SKIP_UNLESS_CI(reason)                                        \
  do {                                                                             \
    if (::tensorstream::testing::running_in_ci()) {                                \
      GTEST_FAIL() << "CI=true, so every tool must be installed, yet " << reason;  \
    }                                                                              \
    GTEST_SKIP() << reason;                                                        \
  } while (false)
