// The XML of S3's multipart uploads, as AWS documents it.

#include "storage/s3/multipart_documents.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace tensorstream::s3
