#pragma once

#include <cstddef>
#include <span>
#include <string>

namespace tensorstream::cli {

/// Lowercase hex SHA-256 of `bytes`.
std::string sha256_hex(std::span<const std::byte> bytes);

}  // namespace tensorstream::cli
