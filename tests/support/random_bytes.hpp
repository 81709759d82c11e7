#pragma once
// Reproducible random object contents for the storage tests.

#include <cstddef>
#include <random>
#include <string>

namespace tensorstream::testing {

/// `size` bytes drawn from a generator seeded with `seed`: the same for the same arguments.
inline std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (auto& c : bytes) c = static_cast<char>(generator());
  return bytes;
}

}  // namespace tensorstream::testing
