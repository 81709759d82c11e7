#include "support/skip.hpp"

#include <cstdlib>
#include <string_view>

namespace tensorstream::testing {

bool running_in_ci() {
  const char* value = std::getenv("CI");
  if (value == nullptr) return false;
  const std::string_view ci(value);
  return ci == "true" || ci == "1";
}

}  // namespace tensorstream::testing
