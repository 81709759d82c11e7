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
    EXPECT_STREQ(error.what(), "invalid URL 'http://[[s]]?…': bad IPv6 address");
  }
}

// A query may be a signature: requests carry it, messages never show it.
TEST(Url, AQueryIsKeptForRequestsAndShownAsAnEllipsis) {
  const Url url = Url::parse("https://cdn.example/m/model.safetensors?Expires=9&Signature=abc");
  EXPECT_EQ(url.query, "Expires=9&Signature=abc");
  EXPECT_EQ(url.str(), "https://cdn.example/m/model.safetensors?…");
  EXPECT_EQ(url.str_with_query(), "https://cdn.example/m/model.safetensors?Expires=9&Signature=abc");
  EXPECT_EQ(Url::parse("https://cdn.example/m/a?").str(), "https://cdn.example/m/a");
  EXPECT_EQ(redact_query("HTTP://h:81/a?sig=1?x"), "HTTP://h:81/a?…");
  EXPECT_EQ(redact_query("http://h/a?"), "http://h/a?");
  // Bucket keys and paths hold '?' literally: nothing to hide.
  EXPECT_EQ(redact_query("s3://bucket/what?.safetensors"), "s3://bucket/what?.safetensors");
  EXPECT_EQ(redact_query("/data/what?/model.safetensors"), "/data/what?/model.safetensors");
  EXPECT_EQ(redact_query("not a url?really"), "not a url?really");
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
