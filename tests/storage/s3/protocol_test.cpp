// S3's XML: ListObjectsV2 pages and error documents, and what the errors mean for retries.

#include <gtest/gtest.h>

#include "storage/s3/adapter.hpp"
#include "storage/s3/list_objects.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

TEST(S3ListObjects, QueryIsInCanonicalOrderAndEncoded) {
  EXPECT_EQ(list_objects_query("models/llama 7b/", true, std::nullopt),
            "delimiter=%2F&list-type=2&prefix=models%2Fllama%207b%2F");
  EXPECT_EQ(list_objects_query("", false, "1/a+b="),
            "continuation-token=1%2Fa%2Bb%3D&list-type=2&prefix=");
}

TEST(S3ListObjects, PageGivesKeysSizesAndTheNextToken) {
  const auto page = parse_list_objects(
      R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Name>models</Name><Prefix>m/</Prefix><KeyCount>2</KeyCount><IsTruncated>true</IsTruncated>
  <NextContinuationToken>tok&amp;1</NextContinuationToken>
  <Contents><Key>m/a &amp; b.safetensors</Key><Size>123456789012</Size></Contents>
  <Contents><Key>m/config.json</Key><Size>0</Size></Contents>
  <CommonPrefixes><Prefix>m/sub/</Prefix></CommonPrefixes>
</ListBucketResult>)",
      "s3://models/m/");
  ASSERT_EQ(page.objects.size(), 2u);
  EXPECT_EQ(page.objects[0].key, "m/a & b.safetensors");
  EXPECT_EQ(page.objects[0].size, 123456789012u);
  EXPECT_EQ(page.objects[1].key, "m/config.json");
  EXPECT_EQ(page.objects[1].size, 0u);
  EXPECT_EQ(page.prefixes, std::vector<std::string>{"m/sub/"});
  EXPECT_EQ(page.next_token, "tok&1");
}

TEST(S3ListObjects, LastPageHasNoToken) {
  const auto page = parse_list_objects(
      "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>", "s3://b/");
  EXPECT_TRUE(page.objects.empty());
  EXPECT_FALSE(page.next_token);
}

TEST(S3ListObjects, MalformedResponsesAreFormatErrors) {
  const auto message = [](std::string_view body) {
    try {
      parse_list_objects(body, "s3://b/p/");
    } catch (const FormatError& error) {
      return std::string(error.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("<html>"), "s3://b/p/: malformed ListObjectsV2 response: Start-end tags mismatch");
  EXPECT_EQ(message("<Error/>"), "s3://b/p/: malformed ListObjectsV2 response: no ListBucketResult element");
  EXPECT_EQ(message("<ListBucketResult><Contents><Key>k</Key><Size>-1</Size></Contents></ListBucketResult>"),
            "s3://b/p/: malformed ListObjectsV2 response: Size '-1' of 'k'");
  EXPECT_EQ(message("<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>"),
            "s3://b/p/: malformed ListObjectsV2 response: IsTruncated without NextContinuationToken");
}

Failure interpreted(unsigned status, std::string body, bool transient = false) {
  Failure failure{"HTTP " + std::to_string(status), transient, status == 404};
  failure.status = status;
  failure.body = std::move(body);
  Adapter(std::string("us-east-1"), nullptr).interpret(failure);
  return failure;
}

std::string error_body(std::string_view code, std::string_view message) {
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" + std::string(code) +
         "</Code><Message>" + std::string(message) +
         "</Message><Key>k</Key><RequestId>4442587FB7D0A2F9</RequestId></Error>";
}

TEST(S3Errors, NoSuchKeyIsNotFoundWithTheServicesMessage) {
  const auto failure = interpreted(404, error_body("NoSuchKey", "The specified key does not exist."));
  EXPECT_EQ(failure.cause,
            "NoSuchKey: The specified key does not exist. (HTTP 404, request id 4442587FB7D0A2F9)");
  EXPECT_TRUE(failure.not_found);
  EXPECT_FALSE(failure.transient);
}

TEST(S3Errors, SignatureAndAccessErrorsFailFast) {
  for (const char* code : {"SignatureDoesNotMatch", "InvalidAccessKeyId", "AccessDenied"}) {
    const auto failure = interpreted(403, error_body(code, "no"));
    EXPECT_FALSE(failure.transient) << code;
    EXPECT_FALSE(failure.not_found) << code;
    EXPECT_EQ(failure.cause, std::string(code) + ": no (HTTP 403, request id 4442587FB7D0A2F9)");
  }
}

TEST(S3Errors, ThrottlingAndTimeoutsAreRetried) {
  EXPECT_TRUE(interpreted(503, error_body("SlowDown", "Reduce your request rate."), true).transient);
  EXPECT_TRUE(interpreted(500, error_body("InternalError", "x"), true).transient);
  // S3 answers an idle upload or download with a 400, yet trying again is what helps.
  EXPECT_TRUE(interpreted(400, error_body("RequestTimeout", "x")).transient);
  EXPECT_FALSE(interpreted(400, error_body("InvalidArgument", "x")).transient);
}

TEST(S3Errors, ABodylessForbiddenSaysWhatItMayMean) {
  EXPECT_EQ(interpreted(403, "").cause,
            "HTTP 403 (S3 sends no details with this response: access is denied, or the "
            "credentials are wrong)");
}

TEST(S3Errors, BodiesThatAreNotErrorDocumentsKeepTheHttpCause) {
  EXPECT_EQ(interpreted(502, "<html>bad gateway</html>", true).cause, "HTTP 502");
}

}  // namespace
}  // namespace tensorstream::s3
