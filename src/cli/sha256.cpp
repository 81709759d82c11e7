#include "cli/sha256.hpp"

#include <openssl/evp.h>

#include <array>

#include "tensorstream/error.hpp"

namespace tensorstream::cli {

std::string sha256_hex(std::span<const std::byte> bytes) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    throw Error("SHA-256 computation failed in OpenSSL");
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string text;
  text.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    text += hex[digest[i] >> 4];
    text += hex[digest[i] & 0xf];
  }
  return text;
}

}  // namespace tensorstream::cli
