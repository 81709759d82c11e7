#pragma once
// Small helpers the benchmarks share.

#include <chrono>
#include <cstdlib>
#include <string>

namespace tensorstream::bench {

/// The environment variable `name`, or `fallback` when it is unset or empty.
inline std::string environment_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

/// Seconds on the steady clock since `start`.
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tensorstream::bench
