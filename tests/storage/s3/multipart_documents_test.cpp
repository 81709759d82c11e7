// The XML of S3's multipart uploads, as AWS documents it.

#include "storage/s3/multipart_documents.hpp"

#include <gtest/gtest.h>

#include <chrono>

#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

const std::string url = "s3://b/k.bin";

TEST(S3MultipartDocuments, TheUploadIdComesFromTheInitiateResult) {
  EXPECT_EQ(parse_upload_id(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<InitiateMultipartUploadResult "
                "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>b</Bucket><Key>k.bin"
                "</Key><UploadId>VXBsb2FkIElE</UploadId></InitiateMultipartUploadResult>",
                url),
            "VXBsb2FkIElE");
  EXPECT_THROW(parse_upload_id("<InitiateMultipartUploadResult/>", url), FormatError);
  EXPECT_THROW(parse_upload_id("not xml <", url), FormatError);
}

TEST(S3MultipartDocuments, TheCompleteBodyListsPartsInOrderWithTheirEtags) {
  EXPECT_EQ(complete_multipart_upload_body({"\"a1\"", "\"b2\""}),
            "<?xml version=\"1.0\"?><CompleteMultipartUpload "
            "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Part><PartNumber>1</PartNumber>"
            "<ETag>\"a1\"</ETag></Part><Part><PartNumber>2</PartNumber><ETag>\"b2\"</ETag>"
            "</Part></CompleteMultipartUpload>");
}

TEST(S3MultipartDocuments, TheMultipartEtagIsTheMd5OfThePartMd5sAndTheirCount) {
  // The MD5s of "part one" and "part two"; the result as Python's hashlib computes it.
  EXPECT_EQ(multipart_etag({"\"3303e12af474ca11d85ed2966a932992\"",
                            "\"3EA4E15B91A17DC76052C56CFCDF67A2\""}),
            "\"0732917abc3288784e318ac0aab1757a-2\"");
  // Not MD5s: encrypted parts' ETags, another store's.
  EXPECT_EQ(multipart_etag({"\"3303e12af474ca11d85ed2966a932992\"", "\"b2\""}), std::nullopt);
  EXPECT_EQ(multipart_etag({"3303e12af474ca11d85ed2966a932992"}), std::nullopt);
  EXPECT_EQ(multipart_etag({"\"3303e12af474ca11d85ed2966a93299z\""}), std::nullopt);
}

TEST(S3MultipartDocuments, AnErrorInA200AnswerToCompleteIsAFailure) {
  EXPECT_NO_THROW(check_complete_multipart_upload(
      "<CompleteMultipartUploadResult><ETag>\"x-2\"</ETag></CompleteMultipartUploadResult>",
      url));
  try {
    check_complete_multipart_upload(
        "<Error><Code>InvalidPart</Code><Message>One or more of the specified parts could not "
        "be found.</Message><RequestId>R1</RequestId></Error>",
        url);
    FAIL();
  } catch (const StorageError& error) {
    EXPECT_EQ(std::string(error.what()),
              "s3://b/k.bin: CompleteMultipartUpload failed: InvalidPart: One or more of the "
              "specified parts could not be found. (HTTP 200, request id R1)");
    EXPECT_FALSE(error.transient());
  }
  EXPECT_THROW(check_complete_multipart_upload("<Other/>", url), FormatError);
}

// The example of the S3 API reference's ListMultipartUploads page, with its Initiator and Owner.
const std::string first_page =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListMultipartUploadsResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
    "<Bucket>bucket</Bucket><KeyMarker></KeyMarker><UploadIdMarker></UploadIdMarker>"
    "<NextKeyMarker>my-movie.m2ts</NextKeyMarker>"
    "<NextUploadIdMarker>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</NextUploadIdMarker>"
    "<MaxUploads>3</MaxUploads><IsTruncated>true</IsTruncated>"
    "<Upload><Key>my-divisor</Key>"
    "<UploadId>XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw</UploadId>"
    "<Initiator><ID>arn:aws:iam::111122223333:user/user1-11111a31-17b5-4fb7-9df5-b111111f13de"
    "</ID><DisplayName>user1-11111a31-17b5-4fb7-9df5-b111111f13de</DisplayName></Initiator>"
    "<Owner><ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a</ID>"
    "<DisplayName>OwnerDisplayName</DisplayName></Owner><StorageClass>STANDARD</StorageClass>"
    "<Initiated>2010-11-10T20:48:33.000Z</Initiated></Upload>"
    "<Upload><Key>my-movie.m2ts</Key>"
    "<UploadId>YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ</UploadId>"
    "<StorageClass>STANDARD</StorageClass>"
    "<Initiated>2010-11-10T20:49:33.000Z</Initiated></Upload>"
    "</ListMultipartUploadsResult>";

std::chrono::system_clock::time_point utc(int year, unsigned month, unsigned day, int hour,
                                          int minute, int second) {
  using namespace std::chrono;
  return sys_days{std::chrono::year{year} / month / day} + hours{hour} + minutes{minute} +
         seconds{second};
}

TEST(S3MultipartDocuments, TheUploadsQueryIsInCanonicalOrderAndEncoded) {
  EXPECT_EQ(list_multipart_uploads_query("llama 7b/", std::nullopt),
            "prefix=llama%207b%2F&uploads");
  EXPECT_EQ(list_multipart_uploads_query("", std::nullopt), "prefix=&uploads");
  EXPECT_EQ(list_multipart_uploads_query("llama/", UploadsMarker{"llama/a+b.bin", "2~x/y="}),
            "key-marker=llama%2Fa%2Bb.bin&prefix=llama%2F&upload-id-marker=2~x%2Fy%3D&uploads");
}

TEST(S3MultipartDocuments, AnUploadsPageGivesKeysIdsTimesAndTheNextMarkers) {
  const MultipartUploadsPage page = parse_list_multipart_uploads(first_page, url);
  ASSERT_EQ(page.uploads.size(), 2u);
  EXPECT_EQ(page.uploads[0].key, "my-divisor");
  EXPECT_EQ(page.uploads[0].id, "XMgbGlrZSBlbHZpbmcncyBub3QgaGF2aW5nIG11Y2ggbHVjaw");
  EXPECT_EQ(page.uploads[0].initiated, utc(2010, 11, 10, 20, 48, 33));
  EXPECT_EQ(page.uploads[1].key, "my-movie.m2ts");
  EXPECT_EQ(page.uploads[1].initiated, utc(2010, 11, 10, 20, 49, 33));
  ASSERT_TRUE(page.next.has_value());
  EXPECT_EQ(page.next->key, "my-movie.m2ts");
  EXPECT_EQ(page.next->upload_id, "YW55IGlkZWEgd2h5IGVsdmluZydzIHVwbG9hZCBmYWlsZWQ");

  const MultipartUploadsPage last = parse_list_multipart_uploads(
      "<ListMultipartUploadsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>"
      "</ListMultipartUploadsResult>",
      url);
  EXPECT_TRUE(last.uploads.empty());
  EXPECT_FALSE(last.next.has_value());
}

TEST(S3MultipartDocuments, MalformedUploadsPagesAreFormatErrorsNamingTheCause) {
  const auto error_of = [](const std::string& body) -> std::string {
    try {
      parse_list_multipart_uploads(body, url);
    } catch (const FormatError& error) {
      return error.what();
    }
    return "no error";
  };
  const std::string prefix = url + ": malformed ListMultipartUploads response: ";
  EXPECT_EQ(error_of("<ListBucketResult/>"),
            prefix + "no ListMultipartUploadsResult element");
  EXPECT_EQ(error_of("<ListMultipartUploadsResult><Upload><Key>k</Key></Upload>"
                     "</ListMultipartUploadsResult>"),
            prefix + "an Upload without Key or UploadId");
  EXPECT_EQ(error_of("<ListMultipartUploadsResult><Upload><Key>k</Key><UploadId>u</UploadId>"
                     "<Initiated>yesterday</Initiated></Upload></ListMultipartUploadsResult>"),
            prefix + "Initiated 'yesterday' of upload u of 'k'");
  EXPECT_EQ(error_of("<ListMultipartUploadsResult><IsTruncated>true</IsTruncated>"
                     "</ListMultipartUploadsResult>"),
            prefix + "IsTruncated without NextKeyMarker");
  EXPECT_EQ(error_of("<ListMultipartUploadsResult>"), prefix.substr(0, prefix.size() - 2) +
                                                          ": Start-end tags mismatch");
}

}  // namespace
}  // namespace tensorstream::s3
