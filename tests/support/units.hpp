#pragma once
// Binary size units for the sizes the tests write.

#include <cstdint>

namespace tensorstream::testing {

inline constexpr std::uint64_t KiB = 1024;
inline constexpr std::uint64_t MiB = 1024 * KiB;

}  // namespace tensorstream::testing
