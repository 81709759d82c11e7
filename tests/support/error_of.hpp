#pragma once
// The message of an expected exception, so that a test compares it whole.

#include <string>

namespace tensorstream::testing {

/// What() of the `Error` that `action` throws; "no error" when it throws nothing. Another
/// exception propagates and fails the test.
template <class Error, class Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

}  // namespace tensorstream::testing
