#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tensorstream/error.hpp"
#include "storage/s3/sigv4.hpp"

namespace tensorstream::s3 {
namespace {

using namespace std::chrono_literals;
using std::chrono::sys_days;
using std::chrono::year;

// The AWS SigV4 test suite's request: GET / on example.amazonaws.com, service "service".
SigningRequest suite_request(std::string path = "/") {
  SigningRequest request;
  request.method = "GET";
  request.host = "example.amazonaws.com";
  request.path = std::move(path);
  request.time = sys_days{year{2015} / 8 / 30} + 12h + 36min;
  request.region = "us-east-1";
  request.service = "service";
  return request;
}

const Credentials suite_credentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "",
                                    std::nullopt};

// The S3 API reference's examples: bucket examplebucket, 24 May 2013.
SigningRequest s3_request(std::string path) {
  SigningRequest request;
  request.host = "examplebucket.s3.amazonaws.com";
  request.path = std::move(path);
  request.time = sys_days{year{2013} / 5 / 24};
  return request;
}

const Credentials s3_credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                                 "", std::nullopt};

// The first `lines` lines of `text`, each with its newline.
std::string head(const std::string& text, int lines) {
  std::size_t end = 0;
  for (int i = 0; i < lines && end != std::string::npos; ++i) end = text.find('\n', end) + 1;
  return text.substr(0, end);
}

std::string header(const SignedRequest& signed_request, const std::string& name) {
  for (const auto& [key, value] : signed_request.headers) {
    if (key == name) return value;
  }
  return "<absent>";
}

TEST(S3Sigv4, GetVanillaCanonicalRequestAndSignature) {
  const auto signed_request = sign(suite_request(), suite_credentials);
  EXPECT_EQ(signed_request.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(signed_request.signature,
            "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(header(signed_request, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(header(signed_request, "x-amz-date"), "20150830T123600Z");
  // Only S3 requires the payload hash header; the suite's generic service does not sign it.
  EXPECT_EQ(header(signed_request, "x-amz-content-sha256"), "<absent>");
  EXPECT_EQ(header(signed_request, "x-amz-security-token"), "<absent>");
}

TEST(S3Sigv4, GetVanillaWithSessionTokenSignsTheToken) {
  auto credentials = suite_credentials;
  credentials.session_token = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267";
  const auto signed_request = sign(suite_request(), credentials);
  EXPECT_EQ(signed_request.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n"
            "x-amz-security-token:"
            "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267\n\n"
            "host;x-amz-date;x-amz-security-token\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(signed_request.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "067b36aa60031588cea4a4cde1f21215227a047690c72247f1d70b32fbbfad2b");
  EXPECT_EQ(signed_request.signature,
            "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8");
  EXPECT_EQ(header(signed_request, "x-amz-security-token"), credentials.session_token);
}

TEST(S3Sigv4, GetUnreservedCharactersAreNotEncoded) {
  const std::string path = "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
  const auto signed_request = sign(suite_request(path), suite_credentials);
  EXPECT_EQ(signed_request.signature,
            "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f");
}

TEST(S3Sigv4, S3GetObjectWithRange) {
  auto request = s3_request("/test.txt");
  request.headers = {{"Range", "bytes=0-9"}};
  const auto signed_request = sign(request, s3_credentials);
  EXPECT_EQ(signed_request.canonical_request,
            "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
            "x-amz-content-sha256:"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n"
            "x-amz-date:20130524T000000Z\n\n"
            "host;range;x-amz-content-sha256;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(signed_request.signature,
            "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(header(signed_request, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
            "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  EXPECT_EQ(header(signed_request, "x-amz-content-sha256"), std::string(empty_payload_hash));
}

TEST(S3Sigv4, S3ListObjectsWithQuerySortsParameters) {
  auto request = s3_request("/");
  request.query = {{"prefix", "J"}, {"max-keys", "2"}};
  const auto signed_request = sign(request, s3_credentials);
  EXPECT_EQ(head(signed_request.canonical_request, 3), "GET\n/\nmax-keys=2&prefix=J\n");
  EXPECT_EQ(signed_request.signature,
            "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
}

TEST(S3Sigv4, UnsignedPayloadIsSentAndSigned) {
  auto request = s3_request("/test.txt");
  request.payload_hash = std::string(unsigned_payload);
  const auto signed_request = sign(request, s3_credentials);
  EXPECT_EQ(header(signed_request, "x-amz-content-sha256"), "UNSIGNED-PAYLOAD");
  EXPECT_TRUE(signed_request.canonical_request.ends_with(
      "x-amz-content-sha256:UNSIGNED-PAYLOAD\nx-amz-date:20130524T000000Z\n\n"
      "host;x-amz-content-sha256;x-amz-date\nUNSIGNED-PAYLOAD"));
}

TEST(S3Sigv4, KeysWithSpacesPlusAndUnicodeAreEncodedOnce) {
  auto request = s3_request("/bucket/my dir/a+b \xE1\x88\xB4%20.bin");
  const auto signed_request = sign(request, s3_credentials);
  EXPECT_EQ(head(signed_request.canonical_request, 3),
            "GET\n/bucket/my%20dir/a%2Bb%20%E1%88%B4%2520.bin\n\n");
}

TEST(S3Sigv4, PathsAreNotNormalized) {
  auto request = s3_request("/bucket/a//b/../c/./d");
  const auto signed_request = sign(request, s3_credentials);
  EXPECT_EQ(head(signed_request.canonical_request, 3), "GET\n/bucket/a//b/../c/./d\n\n");
}

TEST(S3Sigv4, UriEncode) {
  EXPECT_EQ(uri_encode("a b+c/d~e_f.g-h", true), "a%20b%2Bc/d~e_f.g-h");
  EXPECT_EQ(uri_encode("a b+c/d", false), "a%20b%2Bc%2Fd");
  EXPECT_EQ(uri_encode("\xE1\x88\xB4", true), "%E1%88%B4");
  EXPECT_EQ(uri_encode("=&?%", false), "%3D%26%3F%25");
}

TEST(S3Sigv4, QueryNamesAndValuesAreEncodedAndSortedByName) {
  auto request = s3_request("/");
  request.query = {{"prefix", "a b/c+"}, {"list-type", "2"}, {"continuation-token", ""}};
  const auto signed_request = sign(request, s3_credentials);
  EXPECT_EQ(head(signed_request.canonical_request, 3),
            "GET\n/\ncontinuation-token=&list-type=2&prefix=a%20b%2Fc%2B\n");
}

TEST(S3Sigv4, HeaderValuesAreTrimmedAndNamesLowercasedAndSorted) {
  auto request = suite_request();
  request.headers = {{"My-Header1", "  value1  with   spaces "}, {"A-Header", "x"}};
  const auto signed_request = sign(request, suite_credentials);
  EXPECT_EQ(signed_request.canonical_request,
            "GET\n/\n\na-header:x\nhost:example.amazonaws.com\nmy-header1:value1 with spaces\n"
            "x-amz-date:20150830T123600Z\n\n"
            "a-header;host;my-header1;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(S3Sigv4, RepeatedHeadersAreJoinedWithCommas) {
  auto request = suite_request();
  request.headers = {{"My-Header1", "value2"}, {"my-header1", "value1"}};
  const auto signed_request = sign(request, suite_credentials);
  EXPECT_NE(signed_request.canonical_request.find("\nmy-header1:value2,value1\n"),
            std::string::npos);
  EXPECT_NE(signed_request.canonical_request.find("\nhost;my-header1;x-amz-date\n"),
            std::string::npos);
}

TEST(S3Sigv4, PayloadHashAndDate) {
  EXPECT_EQ(payload_hash(""), std::string(empty_payload_hash));
  EXPECT_EQ(payload_hash("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(amz_date(sys_days{year{2026} / 1 / 2} + 3h + 4min + 5s), "20260102T030405Z");
}

TEST(S3Sigv4, RelativePathIsRejected) {
  auto request = suite_request("bucket/key");
  try {
    sign(request, suite_credentials);
    FAIL() << "no exception";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "SigV4: request path \"bucket/key\" does not start with '/'");
  }
}

}  // namespace
}  // namespace tensorstream::s3
