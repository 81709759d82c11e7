#include "support/rsa_key.hpp"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <stdexcept>

namespace tensorstream::testing {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};

template <class Write>
std::string pem(Write write) {
  const std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  if (!bio || write(bio.get()) != 1) throw std::runtime_error("writing a PEM key failed");
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(size));
}

}  // namespace

RsaKeyPair RsaKeyPair::generate(unsigned bits) {
  const std::unique_ptr<EVP_PKEY, KeyFree> key(EVP_RSA_gen(bits));
  if (!key) throw std::runtime_error("generating an RSA key failed");
  RsaKeyPair pair;
  pair.private_key = pem([&](BIO* bio) {
    return PEM_write_bio_PrivateKey(bio, key.get(), nullptr, nullptr, 0, nullptr, nullptr);
  });
  pair.public_key = pem([&](BIO* bio) { return PEM_write_bio_PUBKEY(bio, key.get()); });
  return pair;
}

}  // namespace tensorstream::testing
