#include "support/rsa_certificate.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <memory>
#include <stdexcept>
#include <string_view>

#include "storage/jwt.hpp"

namespace tensorstream::testing {
namespace {

using Bio = std::unique_ptr<BIO, decltype(&BIO_free)>;
using Key = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using Certificate = std::unique_ptr<X509, decltype(&X509_free)>;

Bio memory(std::string_view pem = {}) {
  Bio bio(pem.empty() ? BIO_new(BIO_s_mem())
                      : BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())),
          BIO_free);
  if (!bio) throw std::runtime_error("BIO_new failed");
  return bio;
}

std::string text_of(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(size));
}

Key read_key(const std::string& pem) {
  const auto bio = memory(pem);
  Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr), EVP_PKEY_free);
  if (!key) throw std::runtime_error("reading the test's RSA key failed");
  return key;
}

Certificate read_certificate(const std::string& pem) {
  const auto bio = memory(pem);
  Certificate certificate(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr), X509_free);
  if (!certificate) throw std::runtime_error("reading the test's certificate failed");
  return certificate;
}

}  // namespace

RsaCertificate RsaCertificate::generate(const RsaKeyPair& key, const std::string& common_name) {
  const Key pair = read_key(key.private_key);
  const Certificate certificate(X509_new(), X509_free);
  X509_NAME* name = certificate ? X509_get_subject_name(certificate.get()) : nullptr;
  const auto* cn = reinterpret_cast<const unsigned char*>(common_name.c_str());
  if (!certificate || X509_set_version(certificate.get(), 2) != 1 ||
      ASN1_INTEGER_set(X509_get_serialNumber(certificate.get()), 1) != 1 ||
      X509_gmtime_adj(X509_getm_notBefore(certificate.get()), -3600) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(certificate.get()), 2 * 24 * 3600) == nullptr ||
      X509_set_pubkey(certificate.get(), pair.get()) != 1 || name == nullptr ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, cn, -1, -1, 0) != 1 ||
      X509_set_issuer_name(certificate.get(), name) != 1 ||
      X509_sign(certificate.get(), pair.get(), EVP_sha256()) == 0) {
    throw std::runtime_error("making a self-signed certificate failed");
  }
  const auto bio = memory();
  if (PEM_write_bio_X509(bio.get(), certificate.get()) != 1) {
    throw std::runtime_error("writing a certificate failed");
  }
  return {text_of(bio.get()), key.private_key, key.public_key};
}

RsaCertificate RsaCertificate::of(const std::string& certificate_pem) {
  const Certificate parsed = read_certificate(certificate_pem);
  const auto bio = memory();
  if (PEM_write_bio_PUBKEY(bio.get(), X509_get0_pubkey(parsed.get())) != 1) {
    throw std::runtime_error("writing a certificate's public key failed");
  }
  return {certificate_pem, {}, text_of(bio.get())};
}

std::string RsaCertificate::encrypted_private_key(const std::string& password) const {
  const Key key = read_key(private_key);
  const auto bio = memory();
  if (PEM_write_bio_PKCS8PrivateKey(bio.get(), key.get(), EVP_aes_256_cbc(), password.data(),
                                    static_cast<int>(password.size()), nullptr, nullptr) != 1) {
    throw std::runtime_error("encrypting the test's key failed");
  }
  return text_of(bio.get());
}

std::string RsaCertificate::thumbprint() const {
  const Certificate parsed = read_certificate(certificate);
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (X509_digest(parsed.get(), EVP_sha1(), digest, &length) != 1) {
    throw std::runtime_error("X509_digest failed");
  }
  return base64url(std::string_view(reinterpret_cast<const char*>(digest), length));
}

}  // namespace tensorstream::testing
