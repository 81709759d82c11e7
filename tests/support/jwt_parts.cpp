#include "support/jwt_parts.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdint>
#include <memory>
#include <utility>

namespace tensorstream::testing {

std::optional<std::string> base64url_decode(std::string_view text) {
  std::string decoded;
  std::uint32_t bits = 0;
  int count = 0;
  for (const char c : text) {
    std::uint32_t value = 0;
    if (c >= 'A' && c <= 'Z') value = c - 'A';
    else if (c >= 'a' && c <= 'z') value = c - 'a' + 26;
    else if (c >= '0' && c <= '9') value = c - '0' + 52;
    else if (c == '-') value = 62;
    else if (c == '_') value = 63;
    else return std::nullopt;
    bits = bits << 6 | value;
    count += 6;
    if (count >= 8) {
      count -= 8;
      decoded += static_cast<char>((bits >> count) & 0xff);
    }
  }
  return decoded;
}

bool verify_rs256(const std::string& public_key, std::string_view message,
                  std::string_view signature) {
  const std::unique_ptr<BIO, decltype(&BIO_free)> bio(
      BIO_new_mem_buf(public_key.data(), static_cast<int>(public_key.size())), BIO_free);
  const std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(
      PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  const std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(),
                                                                         EVP_MD_CTX_free);
  return key && context &&
         EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
         EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                          signature.size(),
                          reinterpret_cast<const unsigned char*>(message.data()),
                          message.size()) == 1;
}

std::optional<JwtParts> JwtParts::parse(std::string_view jwt) {
  const auto first_dot = jwt.find('.');
  const auto second_dot = jwt.find('.', first_dot + 1);
  if (first_dot == std::string_view::npos || second_dot == std::string_view::npos ||
      jwt.find('.', second_dot + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  auto header = base64url_decode(jwt.substr(0, first_dot));
  auto claims = base64url_decode(jwt.substr(first_dot + 1, second_dot - first_dot - 1));
  auto signature = base64url_decode(jwt.substr(second_dot + 1));
  if (!header || !claims || !signature) return std::nullopt;
  return JwtParts{std::move(*header), std::move(*claims), std::move(*signature),
                  std::string(jwt.substr(0, second_dot))};
}

}  // namespace tensorstream::testing
