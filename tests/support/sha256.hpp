#pragma once
// SHA-256 digests as `tensorstream stream --checksum sha256` prints them, to check its output.

#include <cstddef>
#include <span>
#include <string>

namespace tensorstream::testing {

/// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::span<const std::byte> bytes);

}  // namespace tensorstream::testing
