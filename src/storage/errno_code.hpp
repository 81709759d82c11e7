#pragma once
// The error_code of an errno value, as the file readers report system call failures.

#include <boost/system/error_code.hpp>

namespace tensorstream {

/// `value` (an errno) in the system category.
inline boost::system::error_code errno_code(int value) {
  return {value, boost::system::system_category()};
}

}  // namespace tensorstream
