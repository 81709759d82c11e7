#include "storage/environment.hpp"

#include <cstdlib>

namespace tensorstream {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace tensorstream
