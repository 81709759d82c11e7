// The XML of S3's ListBuckets, as AWS documents it.

#include "storage/s3/list_buckets.hpp"

#include <gtest/gtest.h>

#include "tensorstream/error.hpp"

namespace tensorstream::s3 {
namespace {

TEST(S3ListBuckets, NamesComeInTheServicesOrderWithTheTokenOfTheNextPage) {
  const auto page = parse_list_buckets(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListAllMyBucketsResult "
      "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Owner><ID>1</ID></Owner><Buckets>"
      "<Bucket><CreationDate>2026-12-01T00:00:00.000Z</CreationDate><Name>models</Name></Bucket>"
      "<Bucket><Name>datasets</Name></Bucket></Buckets>"
      "<ContinuationToken>t/1</ContinuationToken></ListAllMyBucketsResult>",
      "s3://");
  EXPECT_EQ(page.names, (std::vector<std::string>{"models", "datasets"}));
  EXPECT_EQ(page.next_token, "t/1");
  EXPECT_EQ(list_buckets_target(page.next_token), "/?continuation-token=t%2F1");
  EXPECT_EQ(list_buckets_target(std::nullopt), "/");
}

TEST(S3ListBuckets, AnAccountWithoutBucketsIsAnEmptyLastPage) {
  const auto page = parse_list_buckets("<ListAllMyBucketsResult><Buckets/></ListAllMyBucketsResult>",
                                       "s3://");
  EXPECT_TRUE(page.names.empty());
  EXPECT_FALSE(page.next_token);
}

TEST(S3ListBuckets, AMalformedBodyIsAFormatErrorNamingTheListing) {
  try {
    parse_list_buckets("<ListAllMyBucketsResult><Buckets><Bucket/></Buckets>"
                       "</ListAllMyBucketsResult>",
                       "s3://");
    FAIL() << "parsed";
  } catch (const FormatError& error) {
    EXPECT_STREQ(error.what(), "s3://: malformed ListBuckets response: a bucket without Name");
  }
  EXPECT_THROW(parse_list_buckets("<Error/>", "s3://"), FormatError);
  EXPECT_THROW(parse_list_buckets("not xml <", "s3://"), FormatError);
}

}  // namespace
}  // namespace tensorstream::s3
