#include "tensorstream/storage/url.hpp"

#include <gtest/gtest.h>

#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

TEST(Url, BracketedHostsAreIpv6LiteralsThatPrintBack) {
  const Url url = Url::parse("http://[::1]:8080/m/model.safetensors");
  EXPECT_EQ(url.host, "::1");
  EXPECT_EQ(url.port, 8080);
  EXPECT_EQ(Url::parse(url.str()).host, "::1");
}

// Found by url_fuzz: "[s]" was taken as the host and printed back as "http://[s]/", which
// names the host "s".
TEST(Url, BracketsInsideABracketedHostAreRejected) {
  try {
    Url::parse("http://[[s]]?1p//");
    FAIL() << "parsed";
  } catch (const InvalidArgument& error) {
    EXPECT_STREQ(error.what(), "invalid URL 'http://[[s]]?1p//': bad IPv6 address");
  }
}

TEST(Url, ASchemeWithoutItsSlashesIsAMistakeNotALocalPath) {
  for (const std::string text : {"s3:/bucket/key", "https:host/x", "file:/abs"}) {
    EXPECT_THROW(Url::parse(text), InvalidArgument) << text;
  }
  EXPECT_EQ(Url::parse("./s3:/bucket").path, "./s3:/bucket");
  EXPECT_EQ(Url::parse("weights:v2/model.safetensors").path, "weights:v2/model.safetensors");
}

}  // namespace
}  // namespace tensorstream
