#pragma once
// Reproducible random object contents for the storage tests.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

namespace tensorstream::testing {

/// `size` bytes drawn from a generator seeded with `seed`: the same for the same arguments.
/// Eight bytes per draw: the sanitizer builds run unoptimised, where a draw per byte made
/// building a 20 MiB object take seconds.
inline std::string random_bytes(std::size_t size, unsigned seed) {
  std::mt19937_64 generator(seed);
  std::string bytes(size, '\0');
  for (std::size_t at = 0; at < size; at += sizeof(std::uint64_t)) {
    const std::uint64_t word = generator();
    std::memcpy(bytes.data() + at, &word, std::min(sizeof word, size - at));
  }
  return bytes;
}

}  // namespace tensorstream::testing
