#pragma once
// What an exception held in an exception_ptr is, for logs and replies that report a failure long
// after it was caught.

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>
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

/// Whether `error` holds Asio's operation_aborted: a wait that was cancelled, not a failure.
inline bool is_operation_aborted(const std::exception_ptr& error) {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const boost::system::system_error& e) {
    return e.code() == boost::asio::error::operation_aborted;
  } catch (...) {
    return false;
  }
}

}  // namespace tensorstream::detail
