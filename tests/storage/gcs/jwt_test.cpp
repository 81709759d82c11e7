// The JWT a service account signs: base64url, the exact header and claims, and an RS256
// signature checked against the openssl command's.

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "storage/gcs/jwt.hpp"
#include "support/certificates.hpp"
#include "support/child_process.hpp"
#include "support/rsa_key.hpp"
#include "support/skip.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::gcs {
namespace {

using tensorstream::testing::RsaKeyPair;
using tensorstream::testing::TempDir;

const auto issued_at = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));

const RsaKeyPair& rsa_key() {
  static const auto pair = RsaKeyPair::generate();
  return pair;
}

ServiceAccountKey account(std::string key_id) {
  return {"loader@project.iam.gserviceaccount.com", rsa_key().private_key, std::move(key_id),
          "https://oauth2.googleapis.com/token"};
}

// The three parts of "HEADER.CLAIMS.SIGNATURE".
std::vector<std::string> parts(const std::string& jwt) {
  std::vector<std::string> result;
  std::size_t start = 0;
  for (auto dot = jwt.find('.'); dot != std::string::npos; dot = jwt.find('.', start)) {
    result.push_back(jwt.substr(start, dot - start));
    start = dot + 1;
  }
  result.push_back(jwt.substr(start));
  return result;
}

std::string invalid_argument(const std::string& pem) {
  try {
    sign_rs256(pem, "message");
  } catch (const InvalidArgument& error) {
    return error.what();
  }
  return "no error";
}

TEST(GcsJwt, Base64urlMatchesTheRfc4648VectorsWithoutPadding) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("foob"), "Zm9vYg");
  EXPECT_EQ(base64url("fooba"), "Zm9vYmE");
  EXPECT_EQ(base64url("foobar"), "Zm9vYmFy");
}

TEST(GcsJwt, Base64urlUsesTheUrlSafeAlphabet) {
  EXPECT_EQ(base64url("\xfb\xef\xbe"), "----");
  EXPECT_EQ(base64url("\xff\xff\xff"), "____");
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
  EXPECT_EQ(base64url(std::string("\0\0\0", 3)), "AAAA");
}

TEST(GcsJwt, AssertionHasTheHeaderAndClaimsGoogleExpects) {
  const auto jwt =
      parts(service_account_assertion(account("0123abcd"), read_write_scope, issued_at));
  ASSERT_EQ(jwt.size(), 3u);
  EXPECT_EQ(jwt[0], base64url(R"({"alg":"RS256","typ":"JWT","kid":"0123abcd"})"));
  EXPECT_EQ(jwt[1], base64url(R"({"iss":"loader@project.iam.gserviceaccount.com",)"
                              R"("scope":"https://www.googleapis.com/auth/devstorage.read_write",)"
                              R"("aud":"https://oauth2.googleapis.com/token",)"
                              R"("iat":1700000000,"exp":1700003600})"));
}

TEST(GcsJwt, AssertionOfAKeyWithoutIdHasNoKid) {
  const auto jwt = parts(service_account_assertion(account(""), read_write_scope, issued_at));
  ASSERT_EQ(jwt.size(), 3u);
  EXPECT_EQ(jwt[0], base64url(R"({"alg":"RS256","typ":"JWT"})"));
}

// RS256 (PKCS #1 v1.5) is deterministic, so an independent signer must produce the same bytes.
TEST(GcsJwt, SignatureEqualsTheOpensslCommandsSignature) {
  if (!tensorstream::testing::Certificates::available()) {
    TENSORSTREAM_SKIP_UNLESS_CI("the openssl command is not installed");
  }
  const std::string jwt = service_account_assertion(account("id"), read_write_scope, issued_at);
  const auto last_dot = jwt.rfind('.');
  TempDir dir;
  std::ofstream(dir.path() / "key.pem") << rsa_key().private_key;
  std::ofstream(dir.path() / "input", std::ios::binary) << jwt.substr(0, last_dot);
  tensorstream::testing::run_command(
      {"openssl", "dgst", "-sha256", "-sign", (dir.path() / "key.pem").string(), "-out",
       (dir.path() / "signature").string(), (dir.path() / "input").string()},
      dir.path() / "openssl.log");
  const std::string signature = tensorstream::testing::read_text_file(dir.path() / "signature");
  ASSERT_EQ(signature.size(), 256u);
  EXPECT_EQ(jwt.substr(last_dot + 1), base64url(signature));
}

TEST(GcsJwt, KeyThatIsNotPemIsRejected) {
  EXPECT_EQ(invalid_argument("not a key"),
            "private_key is not an unencrypted PEM private key");
}

TEST(GcsJwt, KeyThatIsNotRsaIsRejected) {
  const std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"),
                                                                EVP_PKEY_free);
  ASSERT_TRUE(key);
  const std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  ASSERT_EQ(PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr),
            1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio.get(), &data);
  EXPECT_EQ(invalid_argument(std::string(data, static_cast<std::size_t>(size))),
            "private_key is not an RSA key, which RS256 needs");
}

}  // namespace
}  // namespace tensorstream::gcs
