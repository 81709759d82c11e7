#include "storage/jwt.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cstdint>
#include <memory>

#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct DigestFree {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

// OpenSSL's reason for the last failure. The error queue is per thread and shared with the TLS
// code, so it is emptied here rather than left to confuse a later handshake on this thread.
std::string openssl_reason() {
  const unsigned long code = ERR_peek_last_error();
  const char* reason = ERR_reason_error_string(code);
  ERR_clear_error();
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

}  // namespace

std::string base64url(std::string_view bytes) {
  static constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string text;
  text.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t group = static_cast<std::uint8_t>(bytes[i]) << 16 |
                                static_cast<std::uint8_t>(bytes[i + 1]) << 8 |
                                static_cast<std::uint8_t>(bytes[i + 2]);
    for (int shift = 18; shift >= 0; shift -= 6) text += alphabet[(group >> shift) & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return text;
  std::uint32_t group = static_cast<std::uint8_t>(bytes[i]) << 16;
  if (rest == 2) group |= static_cast<std::uint8_t>(bytes[i + 1]) << 8;
  text += alphabet[(group >> 18) & 63];
  text += alphabet[(group >> 12) & 63];
  if (rest == 2) text += alphabet[(group >> 6) & 63];
  return text;
}

std::string sign_rs256(std::string_view pem, std::string_view message) {
  const std::unique_ptr<BIO, BioFree> bio(
      BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw InvalidArgument("private_key: " + openssl_reason());
  const std::unique_ptr<EVP_PKEY, KeyFree> key(
      PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!key) {
    // OpenSSL 3 says only "unsupported" here, whatever the text was.
    ERR_clear_error();
    throw InvalidArgument("private_key is not an unencrypted PEM private key");
  }
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) {
    throw InvalidArgument("private_key is not an RSA key, which RS256 needs");
  }
  const std::unique_ptr<EVP_MD_CTX, DigestFree> context(EVP_MD_CTX_new());
  std::size_t length = 0;
  const auto* data = reinterpret_cast<const unsigned char*>(message.data());
  if (!context ||
      EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(context.get(), nullptr, &length, data, message.size()) != 1) {
    throw InvalidArgument("signing with private_key failed: " + openssl_reason());
  }
  std::string signature(length, '\0');
  if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &length,
                     data, message.size()) != 1) {
    throw InvalidArgument("signing with private_key failed: " + openssl_reason());
  }
  signature.resize(length);
  return signature;
}

std::int64_t numeric_date(std::chrono::system_clock::time_point time) {
  return std::chrono::duration_cast<std::chrono::seconds>(time.time_since_epoch()).count();
}

std::string signed_jwt(std::string_view header, std::string_view claims, std::string_view pem) {
  const std::string signing_input = base64url(header) + "." + base64url(claims);
  return signing_input + "." + base64url(sign_rs256(pem, signing_input));
}

}  // namespace tensorstream
