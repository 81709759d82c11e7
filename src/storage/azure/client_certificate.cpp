#include "storage/azure/client_certificate.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/json_string.hpp"
#include "storage/jwt.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::azure {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertificateFree {
  void operator()(X509* certificate) const { X509_free(certificate); }
};

std::unique_ptr<BIO, BioFree> read_buffer(std::string_view pem) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) throw InvalidArgument("out of memory reading a PEM file");
  return bio;
}

// Hands OpenSSL the password, and never lets it ask for one on the terminal.
int give_password(char* buffer, int size, int /*writing*/, void* user) {
  const auto& password = *static_cast<const std::string*>(user);
  if (password.empty() || password.size() > static_cast<std::size_t>(size)) return -1;
  std::memcpy(buffer, password.data(), password.size());
  return static_cast<int>(password.size());
}

std::unique_ptr<EVP_PKEY, KeyFree> read_key(std::string_view pem, const std::string& password) {
  const auto bio = read_buffer(pem);
  std::unique_ptr<EVP_PKEY, KeyFree> key(PEM_read_bio_PrivateKey(
      bio.get(), nullptr, give_password, const_cast<std::string*>(&password)));
  // OpenSSL's reasons ("unsupported", "bad decrypt") say less than the cases below.
  ERR_clear_error();
  if (key) return key;
  if (pem.find("ENCRYPTED") == std::string_view::npos) {
    throw InvalidArgument("no PEM private key in the file");
  }
  throw InvalidArgument(password.empty()
                            ? "the private key is encrypted, and no password was given"
                            : "the password does not decrypt the private key");
}

std::string unencrypted_pem(EVP_PKEY* key) {
  const std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    ERR_clear_error();
    throw InvalidArgument("the private key cannot be written as PEM");
  }
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

// A version 4 UUID, as MSAL's jti is.
std::string random_uuid() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof bytes) != 1) {
    ERR_clear_error();
    throw InvalidArgument("no random bytes for the assertion's jti");
  }
  bytes[6] = static_cast<unsigned char>((bytes[6] & 0x0f) | 0x40);
  bytes[8] = static_cast<unsigned char>((bytes[8] & 0x3f) | 0x80);
  char text[37];
  std::snprintf(text, sizeof text,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", bytes[0],
                bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]);
  return text;
}

}  // namespace

ClientCertificate ClientCertificate::parse(std::string_view pem, const std::string& password) {
  const auto bio = read_buffer(pem);
  const std::unique_ptr<X509, CertificateFree> certificate(
      PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (!certificate) throw InvalidArgument("no PEM certificate in the file");
  const auto key = read_key(pem, password);
  if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA) {
    throw InvalidArgument("the private key is not an RSA key, which RS256 needs");
  }
  if (X509_check_private_key(certificate.get(), key.get()) != 1) {
    ERR_clear_error();
    throw InvalidArgument("the private key is not the certificate's");
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (X509_digest(certificate.get(), EVP_sha1(), digest, &length) != 1) {
    ERR_clear_error();
    throw InvalidArgument("the certificate's thumbprint cannot be computed");
  }
  return {base64url(std::string_view(reinterpret_cast<const char*>(digest), length)),
          unencrypted_pem(key.get())};
}

std::string client_assertion(const ClientCertificate& certificate, const std::string& client_id,
                             const std::string& audience,
                             std::chrono::system_clock::time_point now) {
  const std::string header =
      R"({"alg":"RS256","typ":"JWT","x5t":)" + json_string(certificate.thumbprint) + "}";
  const std::int64_t issued = numeric_date(now);
  const std::string claims =
      "{\"aud\":" + json_string(audience) + ",\"iss\":" + json_string(client_id) +
      ",\"sub\":" + json_string(client_id) + ",\"jti\":" + json_string(random_uuid()) +
      ",\"nbf\":" + std::to_string(issued) +
      ",\"exp\":" + std::to_string(issued + client_assertion_lifetime.count()) + "}";
  return signed_jwt(header, claims, certificate.private_key);
}

}  // namespace tensorstream::azure
