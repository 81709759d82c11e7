#include "storage/s3/environment.hpp"

#include <cstdlib>

namespace tensorstream::s3 {

std::string environment(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace tensorstream::s3
