#pragma once
// SHA-256 and HMAC-SHA256 through OpenSSL, as SigV4 uses them.

#include <string>
#include <string_view>

namespace tensorstream::s3 {

/// Raw 32-byte SHA-256 of `data`.
std::string sha256(std::string_view data);

/// Raw 32-byte HMAC-SHA256 of `data` under `key`.
std::string hmac_sha256(std::string_view key, std::string_view data);

/// Lowercase hex of `bytes`.
std::string to_hex(std::string_view bytes);

}  // namespace tensorstream::s3
