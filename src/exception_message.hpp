#pragma once
// The message of an exception held in an exception_ptr, for logs and replies that report a failure
// long after it was caught.

#include <exception>
#include <string>

namespace tensorstream::detail {

/// what() of the exception `error` holds, or "unknown error" for one not derived from
/// std::exception.
inline std::string exception_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace tensorstream::detail
